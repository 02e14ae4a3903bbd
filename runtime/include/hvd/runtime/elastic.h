// The worker's side of the elastic protocol: before every init, a worker
// checks its slot in with the driver for the next generation and learns its
// place in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"

namespace hvd::runtime {

struct JoinedGeneration {
  RuntimeConfig config;  // with this generation's ranks and sizes
  int64_t generation = 0;
  bool sync = true;  // every rank syncs state from rank 0 first
  // Why the driver formed the generation (at most
  // rendezvous::kMaxReasonBytes) and its hosts in rank order with their
  // slots ("a:2"); rank 0 records them on the timeline.
  std::string reason;
  std::vector<std::string> hosts;
};

// Checks slot (config.hostname, config.layout.local_rank) in for the first
// generation after `after` and waits until every slot of it checked in, for
// as long as the driver keeps the generation forming (elastic.cc says how
// the driver bounds it). kNotFound: the slot is not part of the job any
// more; kAborted: the driver ended the job.
common::Result<JoinedGeneration> JoinNextGeneration(
    const RuntimeConfig& config, int64_t after,
    const std::string& notify_address);

}  // namespace hvd::runtime
