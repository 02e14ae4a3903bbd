// The checks a collective's request gets before it enters its set's queue:
// arguments that are wrong on their own fail at once, on this rank, instead
// of in the negotiation.
#pragma once

#include "engine/process_set.h"
#include "hvd/common/status.h"
#include "negotiation/message.h"

namespace hvd::runtime {

// Checks `r` against its set (of a job with `world_size` ranks) and puts it
// in the set's terms: a broadcast root becomes the set rank, missing
// alltoall splits become equal parts. kInvalidArgument says what is wrong.
common::Status CheckRequest(const ProcessSet& set, int world_size, Request* r);

}  // namespace hvd::runtime
