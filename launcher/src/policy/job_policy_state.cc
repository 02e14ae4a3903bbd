// JobPolicy::Save and Resume: the policy's part of DriverState
// (driver_state.h), written by one leader and taken up by the next.
#include "policy/job_policy.h"

#include <algorithm>

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
    saved.index = worker.index;
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

Actions JobPolicy::Resume(TimePoint now, const DriverState& state,
                          const WallClockAnchor& clock) {
  Actions out;
  cooldowns_checked_ = now;
  if (config_.elastic) {
    table_ = HostTable::Restore(config_.cooldown, state.hosts, clock);
  }
  plan_ = state.plan;
  board_ = BoardChanged{plan_.generation, {}, {}};
  complete_ = state.complete_generation;
  if (complete_ == plan_.generation) complete_key_ = PlanKey(plan_);
  holders_.insert(state.holders.begin(), state.holders.end());
  // Only how many generations were joined counts (resets(), and whether
  // any worker ever checked in): the newest one and as many before it.
  int64_t newest = 0;
  for (const SavedWorker& saved : state.workers) {
    newest = std::max(newest, saved.joined);
  }
  if (newest > 0) {
    for (int64_t g = newest - state.resets; g <= newest; ++g) {
      joined_.insert(g);
    }
  }
  next_id_ = state.next_worker_id;
  for (const SavedWorker& saved : state.workers) {
    Worker w;
    w.id = saved.id;
    w.slot = saved.slot;
    w.host = saved.host;
    w.index = saved.index;
    w.start_rank = saved.start_rank;
    w.started = now;
    w.state =
        saved.stopping ? Worker::State::kStopping : Worker::State::kRunning;
    w.joined = saved.joined;
    w.joined_rank = saved.joined_rank;
    w.told = saved.joined;
    workers_[w.id] = w;
    // Its host passed its check under the last leader.
    checks_[w.host].state = HostCheckState::kPassed;
    next_id_ = std::max(next_id_, w.id + 1);
  }
  if (config_.elastic) RequestChecks(now, out);
  UpdateLateness(now);
  MaybeFinish(out);
  return out;
}

}  // namespace hvd::launcher
