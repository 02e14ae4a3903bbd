// JobPolicy's rule for a lost link (job_policy.h): a joined worker whose
// ssh link ended as a lost connection does, with --adopt-grace-seconds,
// is probably alive and waiting in its guard for an hvdrun, as after this
// hvdrun's death: a cut shorter than the grace, healed, must not end it.
// So the worker is reattached (ReattachWorker, as a new leader adopts it),
// a try a second at most, while the window lasts. A try that cannot
// connect ends within the window (its connect is bounded by what is
// left), so a link that lived a whole window was up, and its loss opens a
// new window. Peers asking for a reset without the worker tell that the
// worker itself is gone: it fails at once, as quickly as without the
// rule.
#include "hvd/common/logging.h"
#include "policy/exit_status.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

namespace {

// Tries of one worker's reattaching start at least this far apart.
constexpr std::chrono::seconds kReattachPause{1};
// Less than this left of the window is too little for ssh to connect.
constexpr std::chrono::seconds kShortestConnect{1};

}  // namespace

void JobPolicy::OnLinkLost(TimePoint now, const WorkerLinkLost& event,
                           Actions& out) {
  auto it = workers_.find(event.worker);
  const bool reattach =
      it != workers_.end() && it->second.active() && config_.elastic &&
      config_.reattach_window.count() > 0 && !stopping_ &&
      it->second.joined > 0 && plan_.slots.count(it->second.slot) != 0 &&
      !Late(it->second);
  if (!reattach) {
    OnExit(now, WorkerExited{event.worker, event.wait_status}, out);
    return;
  }
  Worker& w = it->second;
  const TimePoint link_began = w.relinked.value_or(w.started);
  if (!w.reattach_until || now - link_began >= config_.reattach_window) {
    w.reattach_until = now + config_.reattach_window;
    out.push_back(
        Say{"slot " + w.slot + " (rank " + std::to_string(w.joined_rank) +
            ") lost its link to hvdrun (" + DescribeExit(event.wait_status) +
            "); reattaching to its worker for up to " +
            common::DecimalSeconds(config_.reattach_window) +
            " s (--adopt-grace-seconds)"});
  }
  w.reattach_at = std::max(now, link_began + kReattachPause);
}

void JobPolicy::ReattachLinks(TimePoint now, Actions& out) {
  std::vector<std::pair<WorkerId, std::string>> failing;
  for (auto& [id, w] : workers_) {
    if (!w.active() || !w.reattach_at) continue;
    if (Late(w)) {
      failing.emplace_back(id,
                           "lost its link to hvdrun, and its peers asked for "
                           "a reset without it");
    } else if (now + kShortestConnect > *w.reattach_until) {
      failing.emplace_back(
          id, "lost its link to hvdrun and could not be reattached within " +
                  common::DecimalSeconds(config_.reattach_window) +
                  " s (--adopt-grace-seconds)");
    } else if (now >= *w.reattach_at) {
      auto planned = plan_.slots.find(w.slot);
      if (planned == plan_.slots.end()) {  // the job went on without it
        w.state = Worker::State::kExited;
        out.push_back(Say{"slot " + w.slot +
                          " lost its link to hvdrun (not in the current "
                          "generation)"});
        continue;
      }
      SlotAssignment slot;
      slot.host = w.host;
      slot.index = w.index;
      slot.layout = planned->second.layout;
      out.push_back(ReattachWorker{
          id, slot, plan_.generation,
          std::chrono::floor<std::chrono::seconds>(*w.reattach_until - now)});
      w.relinked = now;
      w.reattach_at.reset();
    }
  }
  bool broke = false;
  std::string why;
  for (const auto& [id, what] : failing) {
    Worker& w = workers_.at(id);
    w.state = Worker::State::kExited;
    const Failed failed = FailWorker(now, w, what, 255, 0, out);
    broke |= failed.broke;
    why += (why.empty() ? "" : "; ") +
           ("slot " + w.slot + " failed, " + failed.blacklisted);
  }
  if (!why.empty()) Reassign(now, why, broke, out);
}

void JobPolicy::StopUnlinked(const Actions& actions, Actions& out) {
  std::vector<WorkerId> told;
  for (const Action& action : actions) {
    if (auto* signal = std::get_if<SignalWorker>(&action)) {
      told.push_back(signal->worker);
    }
  }
  for (WorkerId id : told) {
    auto it = workers_.find(id);
    if (it == workers_.end()) continue;
    Worker& w = it->second;
    if (!w.alive() || !w.reattach_at) continue;
    w.state = Worker::State::kExited;
    w.reattach_at.reset();
    out.push_back(Say{"slot " + w.slot +
                      " has no link to hvdrun to be stopped through; its "
                      "guard stops it when its grace ends"});
  }
}

}  // namespace hvd::launcher
