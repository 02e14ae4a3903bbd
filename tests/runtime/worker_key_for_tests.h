// What hvdrun gives a worker (its id, slot and own key), for the test
// programs that build a RuntimeConfig themselves instead of reading it from
// hvdrun's environment.
#pragma once

#include <cstdint>
#include <string>

#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/worker_assignment.h"
#include "hvd/runtime/config.h"

namespace hvd::testing {

// `config`'s hostname and local rank name the slot, as at a real start.
inline void GiveWorkerKey(runtime::RuntimeConfig& config,
                          const std::string& job_secret, int64_t worker_id) {
  config.worker_id = worker_id;
  config.slot = rendezvous::SlotName(config.hostname, config.layout.local_rank);
  config.worker_key = common::WorkerKey(job_secret, config.identity());
}

}  // namespace hvd::testing
