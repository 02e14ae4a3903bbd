// JobPolicy::Save: the policy's part of DriverState (driver_state.h).
#include "policy/job_policy.h"

namespace hvd::launcher {

DriverState JobPolicy::Save(const WallClockAnchor& clock) const {
  DriverState state;
  state.plan = plan_;
  state.complete_generation = complete_;
  state.holders.assign(holders_.begin(), holders_.end());
  state.resets = resets();
  state.next_worker_id = next_id_;
  for (const auto& [id, worker] : workers_) {
    if (!worker.alive()) continue;
    SavedWorker saved;
    saved.id = id;
    saved.slot = worker.slot;
    saved.host = worker.host;
    saved.start_rank = worker.start_rank;
    saved.joined = worker.joined;
    saved.joined_rank = worker.joined_rank;
    saved.stopping = worker.state == Worker::State::kStopping;
    state.workers.push_back(std::move(saved));
  }
  if (config_.elastic) {
    state.hosts = table_.Save(clock);
  } else {
    for (const HostSlots& host : static_hosts_) {
      state.hosts.push_back({host.host, host.slots, true, {}, {}});
    }
  }
  return state;
}

}  // namespace hvd::launcher
