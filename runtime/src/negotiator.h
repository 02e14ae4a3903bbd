// The negotiation transport: each cycle every rank sends its encoded
// RequestList to rank 0 with a Gloo gather, rank 0 runs the Coordinator and
// sends the encoded ResponseList back with a Gloo broadcast. Messages travel
// in fixed slots so that a typical cycle costs exactly one gather and one
// broadcast; a longer message costs one more round (see docs/design.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gloo/context.h>

#include "coordinator.h"
#include "hvd/common/status.h"
#include "message.h"

namespace hvd::runtime {

class Negotiator {
 public:
  // Uses `context` (the process set's) for its collectives only;
  // `global_ranks` are the set's members, named in error messages.
  Negotiator(std::shared_ptr<gloo::Context> context,
             std::vector<int> global_ranks);

  // One cycle, on every rank: what to run now, identical on every rank.
  common::Result<ResponseList> Exchange(const RequestList& mine);

  // The message table; meaningful on the set's first rank only.
  Coordinator& coordinator() { return coordinator_; }

 private:
  // Gloo gather to rank 0 (`out` is filled there only) and broadcast from
  // rank 0, in place.
  common::Status Gather(std::vector<char>& in, std::vector<char>* out);
  common::Status Broadcast(std::vector<char>* buffer);
  // Rank 0: feeds every rank's gathered requests to the coordinator and
  // encodes its answer. Each rank's message starts at rank * stride; with
  // `lengths` null, it is length-prefixed.
  std::string Coordinate(const std::vector<char>& gathered, size_t stride,
                         const uint32_t* lengths, common::Status* status);

  std::shared_ptr<gloo::Context> context_;
  Coordinator coordinator_;  // used on rank 0 only
};

}  // namespace hvd::runtime
