// Driver's side of a job kept in etcd: the state it saves there, and the
// takeover of a job another hvdrun led (--standby).
#include "driver/driver_loop.h"

#include <spdlog/spdlog.h>

#include <map>
#include <string>

#include "hvd/common/logging.h"

namespace hvd::launcher {

void Driver::Resume(TimePoint now) {
  const DriverState& state = *resumed_;
  if (config_.elastic && state.plan.generation > 0) {
    std::map<std::string, std::string> notify;
    for (const SavedWorker& w : state.workers) {
      if (!w.notify.empty()) notify[w.slot] = w.notify;
    }
    common::Status resumed = server_.board().Resume(state.plan, notify);
    if (!resumed.ok()) spdlog::error("hvdrun: {}", resumed.message());
    server_.set_generation(state.plan.generation);
  }
  // The page shows the adopted workers and their generation at once, not
  // only as the workers' next reports arrive.
  record_.OnResumed(now, state);
  Execute(now, policy_.Resume(now, state, clock_));
  etcd_->TakeoverPhase({{"rebuilt_ms", common::WallClockMs()}});
  int adopted = 0;
  for (const SavedWorker& w : state.workers) {
    SlotAssignment slot;
    slot.host = w.host;
    auto planned = state.plan.slots.find(w.slot);
    if (planned != state.plan.slots.end()) {
      slot.layout = planned->second.layout;
    } else {
      slot.layout.rank = w.start_rank;
    }
    slot.index = w.index;
    if (!w.adoptable) {
      inbox_.Post(WorkerLaunchFailed{
          w.id,
          "it ran beside the last leader, or without a guard that waits "
          "for one (--adopt-grace-seconds)",
          true});
      continue;
    }
    auto process = AdoptWorker(slot, w.id, launch_, config_);
    if (!process.ok()) {
      inbox_.Post(WorkerLaunchFailed{w.id, process.status().message(), true});
      continue;
    }
    Keep(w.id, slot, state.plan.generation, *process, "is adopted through pid");
    ++adopted;
  }
  etcd_->TakeoverPhase({{"adopted_ms", common::WallClockMs()},
                        {"generation", state.plan.generation},
                        {"adopted", adopted},
                        {"workers", state.workers.size()}});
  // A Say, so that the page's "hvdrun says" has it too.
  Execute(Clock::now(),
          {Say{"took job '" + config_.job_id + "' over at " +
               (state.plan.generation > 0
                    ? "generation " + std::to_string(state.plan.generation)
                    : std::string("its start")) +
               ": adopting " + std::to_string(adopted) + " of " +
               std::to_string(state.workers.size()) + " workers"}});
}

void Driver::ReleaseAdoptable() {
  for (auto& [id, worker] : workers_) {
    if (worker.process.adoptable && worker.process.control_fd >= 0) {
      close(worker.process.control_fd);
      worker.process.control_fd = -1;
    }
  }
}

void Driver::SaveState() {
  DriverState state = policy_.Save(clock_);
  RefreshAddresses();
  const auto reports = server_.reports().Latest();
  bool lacks_pid = false;
  for (SavedWorker& worker : state.workers) {
    auto report = reports.find(worker.slot);
    if (report != reports.end() && report->second.worker == worker.id) {
      worker.pid = report->second.pid;
    }
    lacks_pid = lacks_pid || (worker.pid == 0 && !worker.stopping);
    auto running = workers_.find(worker.id);
    worker.adoptable =
        running != workers_.end() && running->second.process.adoptable;
    // A slot's address is its newest joined worker's.
    auto address = addresses_.find(worker.slot);
    if (worker.joined > 0 && address != addresses_.end()) {
      worker.notify = address->second;
    }
  }
  state_lacks_pid_ = lacks_pid;
  std::string text = EncodeDriverState(state);
  if (text == saved_state_) return;
  if (text.size() > kMaxDriverStateBytes) {
    if (!state_too_large_) {
      spdlog::warn(
          "hvdrun: the driver's state is {} bytes, over the {} that etcd "
          "keeps for it; etcd keeps the last state that fitted",
          text.size(), kMaxDriverStateBytes);
    }
    state_too_large_ = true;
    return;
  }
  state_too_large_ = false;
  saved_state_ = text;
  etcd_->SaveState(std::move(text));
}

}  // namespace hvd::launcher
