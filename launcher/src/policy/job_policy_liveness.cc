// JobPolicy's liveness rules (job_policy.h): a new worker must check in
// within --start-timeout; a joined worker that is late for a check-in (or,
// under probe_members, any member) is probed, and one that misses
// liveness_misses probes in a row is killed and failed.
#include <signal.h>

#include "hvd/common/logging.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

void JobPolicy::FailLateStarters(TimePoint now, Actions& out) {
  // New workers that never checked in: failed (or, for a slot no longer in
  // the job, just stopped).
  std::vector<WorkerId> late_starters;
  for (auto& [id, w] : workers_) {
    if (w.active() && w.joined == 0 &&
        now >= w.started + config_.start_timeout) {
      late_starters.push_back(id);
    }
  }
  bool broke = false;
  std::string why;
  for (WorkerId id : late_starters) {
    Worker& w = workers_.at(id);
    out.push_back(SignalWorker{id, SIGKILL});
    w.state = Worker::State::kStopping;
    if (!plan_.slots.count(w.slot)) continue;
    broke |= FailWorker(now, w,
                        "did not check in within " +
                            common::DecimalSeconds(config_.start_timeout) +
                            " s of its start (--start-timeout); killed",
                        1, 0, out)
                 .broke;
    why += (why.empty() ? "" : ", ") + w.slot;
  }
  if (!why.empty()) {
    Reassign(now,
             "slots did not check in within " +
                 common::DecimalSeconds(config_.start_timeout) + " s: " + why,
             broke, out);
  }
}

void JobPolicy::StartProbes(TimePoint now, Actions& out) {
  for (auto& [id, w] : workers_) {
    if (w.state == Worker::State::kRunning && w.next_probe &&
        now >= *w.next_probe) {
      out.push_back(ProbeWorker{id, w.slot});
      w.state = Worker::State::kProbing;
    }
  }
}

void JobPolicy::OnProbe(TimePoint now, const WorkerProbed& event,
                        Actions& out) {
  auto it = workers_.find(event.worker);
  if (it == workers_.end()) return;
  Worker& w = it->second;
  if (w.state == Worker::State::kProbing) w.state = Worker::State::kRunning;
  if (!w.active() || stopping_) return;
  if (!w.next_probe) return;  // no longer late: the answer is moot
  w.misses = event.alive ? 0 : w.misses + 1;
  // Soon again when the process is gone, or, under probe_members, when
  // nothing else would tell of a silent node.
  const bool soon = event.refused || (!event.alive && config_.probe_members);
  w.next_probe =
      now + (soon ? config_.quick_probe_interval : config_.liveness_interval);
  if (w.misses < config_.liveness_misses) return;
  out.push_back(SignalWorker{w.id, SIGKILL});
  w.state = Worker::State::kStopping;
  const Failed failed =
      FailWorker(now, w,
                 event.refused ? "refused " + std::to_string(w.misses) +
                                     " liveness probes in a row (its "
                                     "process is gone); killed"
                               : "did not answer " + std::to_string(w.misses) +
                                     " liveness probes in a row (hung); "
                                     "killed",
                 1, 0, out);
  Reassign(now, "slot " + w.slot + " is hung; " + failed.blacklisted,
           failed.broke, out);
}

bool JobPolicy::Late(const Worker& w) const {
  const bool in_plan = plan_.slots.count(w.slot) != 0;
  const bool asking = board_.reset_requests.count(w.slot) != 0;
  const bool checked_in = !board_.missing.count(w.slot);
  return in_plan && !asking &&
         ((!checked_in && w.told == plan_.generation) ||
          !board_.reset_requests.empty());
}

void JobPolicy::UpdateLateness(TimePoint now) {
  if (!config_.elastic || stopping_) return;
  for (auto& [id, w] : workers_) {
    if (!w.active() || w.joined == 0) continue;
    const bool late = Late(w);
    const bool watched =
        late || (config_.probe_members && plan_.slots.count(w.slot) != 0);
    if (!watched) {
      w.next_probe.reset();
      w.misses = 0;
    } else if (!w.next_probe) {
      w.next_probe = now + (late ? config_.quick_probe_interval
                                 : config_.liveness_interval);
    }
  }
}

}  // namespace hvd::launcher
