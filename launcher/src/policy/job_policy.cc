#include "policy/job_policy.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <utility>

#include "hvd/common/logging.h"
#include "policy/exit_status.h"
#include "policy/horovod_words.h"

namespace hvd::launcher {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// The hosts of `slots` (in rank order, a host's ranks contiguous) with
// their slot counts: "a:2", "b:2".
std::vector<std::string> HostsOf(const std::vector<SlotAssignment>& slots) {
  std::vector<std::pair<std::string, int>> counted;
  for (const SlotAssignment& slot : slots) {
    if (counted.empty() || counted.back().first != slot.host) {
      counted.emplace_back(slot.host, 0);
    }
    ++counted.back().second;
  }
  std::vector<std::string> hosts;
  for (const auto& [host, count] : counted) {
    hosts.push_back(host + ":" + std::to_string(count));
  }
  return hosts;
}

void Earliest(std::optional<TimePoint>& best, std::optional<TimePoint> t) {
  if (t && (!best || *t < *best)) best = t;
}

}  // namespace

std::set<std::string> JobPolicy::PlanKey(
    const rendezvous::GenerationPlan& plan) {
  std::set<std::string> key;
  for (const auto& [name, a] : plan.slots) {
    key.insert(name + "#" + std::to_string(a.layout.rank));
  }
  return key;
}

std::string SlotNameOf(const SlotAssignment& slot) {
  return rendezvous::SlotName(slot.host, SlotIndex(slot));
}

PolicyConfig PolicyConfig::From(const LaunchConfig& config) {
  PolicyConfig policy;
  policy.elastic = config.elastic;
  policy.num_proc = config.num_proc;
  policy.min_np = config.min_np > 0 ? config.min_np : config.num_proc;
  policy.max_np = config.max_np;
  policy.reset_limit = config.reset_limit;
  if (config.cooldown_range) {
    policy.cooldown =
        CooldownRange{std::chrono::seconds(config.cooldown_range->first),
                      std::chrono::seconds(config.cooldown_range->second)};
  }
  policy.elastic_timeout = config.elastic_timeout;
  policy.start_timeout = config.start_timeout;
  policy.stop_grace = config.stop_grace;
  policy.check_hosts = true;
  policy.reattach_window = config.adopt_grace;
  policy.probe_members = config.launcher == Launcher::kSlurm;
  policy.network_interfaces =
      common::SplitInterfaceList(config.network_interface);
  return policy;
}

JobPolicy::JobPolicy(PolicyConfig config, std::vector<HostSlots> hosts)
    : config_(std::move(config)),
      table_(config_.cooldown),
      static_hosts_(std::move(hosts)) {
  if (config_.elastic) table_.Update(static_hosts_);
}

int JobPolicy::resets() const {
  return joined_.empty() ? 0 : static_cast<int>(joined_.size()) - 1;
}

std::vector<HostTable::Row> JobPolicy::HostRows(TimePoint now) const {
  if (config_.elastic) return table_.Rows(now);
  std::vector<HostTable::Row> rows;
  for (const HostSlots& host : static_hosts_) {
    rows.push_back({host.host, host.slots, true, false, std::nullopt, 0});
  }
  return rows;
}

Actions JobPolicy::Start(TimePoint now) {
  Actions out;
  cooldowns_checked_ = now;
  if (config_.elastic) {
    RequestChecks(now, out);
    start_pending_ = AnyCheckPending();
    if (!start_pending_) Reassign(now, "start", false, out);
  } else {
    auto ranks = AssignRanks(static_hosts_, config_.num_proc);
    if (!ranks.ok()) {
      Stop(now, ranks.status().message(), 1, out);
    } else if (config_.check_hosts) {
      // Nothing starts before every host of the job passed its check.
      awaiting_checks_ = *ranks;
      for (const SlotAssignment& slot : *ranks) {
        if (checks_.count(slot.host)) continue;
        QueueCheck(now, slot.host, out);
      }
    } else {
      for (const SlotAssignment& slot : *ranks) StartSlot(now, slot, 0, out);
    }
  }
  UpdateLateness(now);
  MaybeFinish(out);
  return out;
}

Actions JobPolicy::OnEvent(TimePoint now, const Event& event) {
  Actions out;
  if (finished_) return out;
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, HostsDiscovered>) {
          OnHosts(now, e, out);
        } else if constexpr (std::is_same_v<T, WorkerExited>) {
          OnExit(now, e, out);
        } else if constexpr (std::is_same_v<T, WorkerLinkLost>) {
          OnLinkLost(now, e, out);
        } else if constexpr (std::is_same_v<T, WorkerLaunchFailed>) {
          OnLaunchFailed(now, e, out);
        } else if constexpr (std::is_same_v<T, BoardChanged>) {
          OnBoard(now, e, out);
        } else if constexpr (std::is_same_v<T, WorkerProbed>) {
          OnProbe(now, e, out);
        } else if constexpr (std::is_same_v<T, HostChecked>) {
          OnHostChecked(now, e, out);
        } else if constexpr (std::is_same_v<T, SignalReceived>) {
          OnSignal(now, e.signal, out);
        } else if constexpr (std::is_same_v<T, LeadTaken>) {
          Stop(now, e.reason, 1, out);
        }
      },
      event);
  OnTimers(now, out);
  RequestChecks(now, out);
  StopUnlinked(Actions(out), out);
  UpdateLateness(now);
  MaybeFinish(out);
  return out;
}

std::optional<TimePoint> JobPolicy::NextDeadline() const {
  std::optional<TimePoint> next;
  if (finished_) return next;
  if (stopping_) {
    Earliest(next, kill_at_);
    Earliest(next, give_up_at_);
    return next;
  }
  for (const auto& [host, check] : checks_) {
    if (check.state == HostCheckState::kPending) {
      Earliest(next, CheckDeadline(check.started));
    }
  }
  if (!config_.elastic) return next;
  if (waiting_since_) Earliest(next, *waiting_since_ + config_.elastic_timeout);
  Earliest(next, table_.NextCooldownEnd(cooldowns_checked_));
  for (const auto& [id, w] : workers_) {
    if (!w.active()) continue;
    if (w.joined == 0) Earliest(next, w.started + config_.start_timeout);
    if (w.state != Worker::State::kProbing) Earliest(next, w.next_probe);
    Earliest(next, w.reattach_at);
  }
  return next;
}

void JobPolicy::OnHosts(TimePoint now, const HostsDiscovered& event,
                        Actions& out) {
  if (!config_.elastic) return;
  // Discovery reports every run; the same hosts again are no cause (a
  // cooldown that ended meanwhile is OnTimers' to tell).
  if (!table_.Update(event.hosts) || stopping_) return;
  if (waiting_since_ || MembershipChanged(now)) {
    Reassign(now, "hosts changed", false, out);
  }
}

void JobPolicy::OnExit(TimePoint now, const WorkerExited& event, Actions& out) {
  auto it = workers_.find(event.worker);
  if (it == workers_.end() || !it->second.alive()) return;
  Worker& w = it->second;
  const bool ok =
      WIFEXITED(event.wait_status) && WEXITSTATUS(event.wait_status) == 0;
  const bool was_stopped = w.state == Worker::State::kStopping;
  w.state = ok ? Worker::State::kExitedOk : Worker::State::kExited;
  const std::string how = DescribeExit(event.wait_status);
  const int signal =
      WIFSIGNALED(event.wait_status) ? WTERMSIG(event.wait_status) : 0;
  if (!config_.elastic) {
    if (ok || stopping_) return;
    out.push_back(WorkerFailed{w.id, w.slot, w.host, w.start_rank, 0, how,
                               ShellExitCode(event.wait_status), signal});
    AddSuspect(w.host, true);
    Stop(now,
         "rank " + std::to_string(w.start_rank) + " on host " + w.host + " " +
             how,
         ShellExitCode(event.wait_status), out,
         horovod_words::kProcessesFailed);
    return;
  }
  const bool current = plan_.slots.count(w.slot) != 0;
  const bool failure = !ok && current && !stopping_ && !was_stopped;
  if (!failure) {  // a failure is told by FailWorker
    out.push_back(Say{"slot " + w.slot + " (started as rank " +
                      std::to_string(w.start_rank) + ") " + how +
                      (current ? "" : " (not in the current generation)")});
  }
  if (stopping_ || was_stopped) return;
  if (ok) {
    // Success: every worker holding the committed state finished; before
    // any generation completed, every worker of the newest one did.
    bool done;
    if (!holders_.empty()) {
      done = std::all_of(holders_.begin(), holders_.end(), [&](WorkerId id) {
        return workers_.at(id).state == Worker::State::kExitedOk;
      });
    } else {
      done = running() == 0 && !plan_.slots.empty() &&
             std::all_of(plan_.slots.begin(), plan_.slots.end(),
                         [&](const auto& entry) {
                           for (const auto& [id, other] : workers_) {
                             if (other.slot == entry.first &&
                                 other.state == Worker::State::kExitedOk)
                               return true;
                           }
                           return false;
                         });
    }
    if (done) Succeed(now, out);
    return;
  }
  if (!current) return;  // a removed slot's worker: not part of the job
  const Failed failed =
      FailWorker(now, w, how, ShellExitCode(event.wait_status), signal, out);
  Reassign(now, "slot " + w.slot + " failed; " + failed.blacklisted,
           failed.broke, out);
}

void JobPolicy::OnLaunchFailed(TimePoint now, const WorkerLaunchFailed& event,
                               Actions& out) {
  auto it = workers_.find(event.worker);
  if (it == workers_.end() || !it->second.alive()) return;
  Worker& w = it->second;
  w.state = Worker::State::kExited;
  const std::string what =
      event.adopting ? "could not be adopted" : "could not be started";
  if (!config_.elastic) {
    out.push_back(WorkerFailed{w.id, w.slot, w.host, w.start_rank, w.joined,
                               what + ": " + event.message, 1, 0});
    AddSuspect(w.host, true);
    Stop(now, event.message, 1, out);
    return;
  }
  if (stopping_) return;
  const Failed failed =
      FailWorker(now, w, what + ": " + event.message, 1, 0, out);
  Reassign(now, "slot " + w.slot + " " + what + "; " + failed.blacklisted,
           failed.broke, out);
}

void JobPolicy::OnBoard(TimePoint now, const BoardChanged& event,
                        Actions& out) {
  if (event.generation != plan_.generation || event.generation == 0) return;
  board_ = event;
  bool completed = false;
  for (const auto& [name, a] : plan_.slots) {
    if (board_.missing.count(name)) continue;
    Worker* w = RunningIn(name);
    if (w && w->joined < plan_.generation) {
      w->joined = plan_.generation;
      w->joined_rank = a.layout.rank;
      joined_.insert(plan_.generation);
    }
  }
  if (board_.missing.empty() && complete_ != plan_.generation) {
    completed = true;
    complete_ = plan_.generation;
    complete_key_ = PlanKey(plan_);
    holders_.clear();
    for (const auto& [name, a] : plan_.slots) {
      if (Worker* w = RunningIn(name)) holders_.insert(w->id);
    }
  }
  if (stopping_) return;
  if (push_when_ready_) {
    std::set<std::string> told(push_when_ready_->slots.begin(),
                               push_when_ready_->slots.end());
    bool newcomers_in = std::all_of(
        board_.missing.begin(), board_.missing.end(),
        [&](const std::string& slot) { return told.count(slot) != 0; });
    if (newcomers_in) {
      for (auto& [id, w] : workers_) {
        if (told.count(w.slot) && w.alive()) w.told = plan_.generation;
      }
      out.push_back(*push_when_ready_);
      push_when_ready_.reset();
    }
  }
  // Every running member asked for a new world without any worker failing:
  // a stall shutdown, or connections lost between live workers.
  if (!board_.reset_requests.empty()) {
    bool all_asked = true;
    for (const auto& [id, w] : workers_) {
      if (w.active() && IsHolder(w) && !board_.reset_requests.count(w.slot)) {
        all_asked = false;
      }
    }
    if (all_asked) {
      Reassign(now,
               "every rank of generation " + std::to_string(complete_) +
                   " asked for a reset without a failed worker",
               true, out);
    }
  }
  // New slots held back while rank 0's host led with its holders
  // (job_policy_slots.cc) start once its new workers hold the state too.
  if (completed && complete_ == plan_.generation && MembershipChanged(now)) {
    Reassign(now, "held-back slots can start", false, out);
  }
}

void JobPolicy::OnTimers(TimePoint now, Actions& out) {
  if (stopping_) {
    EscalateStop(now, out);
    return;
  }
  FailUnansweredChecks(now, out);
  if (!config_.elastic || stopping_) return;

  FailLateStarters(now, out);
  ReattachLinks(now, out);
  CheckWaiting(now, out);
  if (stopping_) return;

  StartProbes(now, out);

  auto cooldown_end = table_.NextCooldownEnd(cooldowns_checked_);
  const bool cooled_down = cooldown_end && *cooldown_end <= now;
  const char* cooled_down_why = table_.HostCooldownEnds(cooldowns_checked_, now)
                                    ? "a blacklisted host's cooldown ended"
                                    : "a blacklisted slot's cooldown ended";
  if (cooled_down) cooldowns_checked_ = now;
  if (waiting_since_ && now >= *waiting_since_ + config_.elastic_timeout) {
    auto blacklisted = table_.Blacklisted(now);
    Stop(now,
         "not enough slots for " +
             common::DecimalSeconds(config_.elastic_timeout) + " s (--min-np " +
             std::to_string(config_.min_np) + ")" +
             (blacklisted.empty() ? std::string()
                                  : "; blacklisted hosts: " +
                                        std::to_string(blacklisted.size())),
         1, out,
         horovod_words::SlotsTimedOut(
             config_.min_np, common::DecimalSeconds(config_.elastic_timeout)));
    return;
  }
  if (cooled_down && (waiting_since_ || MembershipChanged(now))) {
    Reassign(now, cooled_down_why, false, out);
  }
}

JobPolicy::Failed JobPolicy::FailWorker(TimePoint now, Worker& w,
                                        const std::string& what, int exit_code,
                                        int signal, Actions& out) {
  auto in_plan = plan_.slots.find(w.slot);
  const int rank = w.joined > 0                   ? w.joined_rank
                   : in_plan != plan_.slots.end() ? in_plan->second.layout.rank
                                                  : w.start_rank;
  failures_.push_back({w.joined, "slot " + w.slot + " (rank " +
                                     std::to_string(rank) + ") " + what});
  out.push_back(Say{failures_.back().second});
  out.push_back(WorkerFailed{w.id, w.slot, w.host, rank, w.joined, what,
                             exit_code, signal});
  exit_code_ = exit_code;
  CountFailedStart(w, what);
  Failed failed{IsHolder(w), "host " + w.host + " blacklisted"};
  if (KeepsHostOf(now, w)) {
    auto cooldown = table_.BlacklistSlot(w.host, w.index, now);
    failed.blacklisted = "slot blacklisted, host " + w.host + " kept";
    out.push_back(
        Say{"host " + w.host +
            " stays: blacklisting it would stop every worker "
            "that holds the committed state; slot " +
            w.slot + " is out " +
            (cooldown ? "for " +
                            common::DecimalSeconds(
                                duration_cast<milliseconds>(*cooldown)) +
                            " s"
                      : std::string("for good"))});
  } else {
    table_.Blacklist(w.host, now);
    DropCheck(w.host);  // checked again when it comes back
    // The host is out of the job: its other workers go too.
    for (auto& [id, other] : workers_) {
      if (other.active() && other.host == w.host && id != w.id) {
        out.push_back(SignalWorker{id, SIGTERM});
        other.state = Worker::State::kStopping;
        failed.broke |= IsHolder(other);
      }
    }
  }
  if (failed.broke) {
    // Survivors blocked on a hung peer would otherwise wait out the Gloo
    // timeout; the ones blocked on a dead worker fail by themselves.
    PushAbort abort{plan_.generation, "slot " + w.slot + " " + what, {}};
    for (const auto& [id, other] : workers_) {
      if (other.active() && other.joined > 0) {
        abort.slots.push_back(other.slot);
      }
    }
    if (!abort.slots.empty()) out.push_back(abort);
  }
  return failed;
}

void JobPolicy::Reassign(TimePoint now, const std::string& why,
                         bool members_failed, Actions& out) {
  if (stopping_ || start_pending_ || StopIfCannotStart(now, out)) return;
  std::vector<SlotAssignment> slots = WouldBeSlots(now);
  const bool first = plan_.generation == 0;
  const int needed = first ? config_.num_proc : config_.min_np;
  if (static_cast<int>(slots.size()) < needed) {
    if (!waiting_since_) {
      waiting_since_ = now;
      out.push_back(Say{std::to_string(slots.size()) + " usable slots, " +
                        std::to_string(needed) + " needed; waiting up to " +
                        common::DecimalSeconds(config_.elastic_timeout) +
                        " s for more (" + why + ")"});
    }
    CheckWaiting(now, out);
    return;
  }
  if (!holders_.empty()) {
    bool holder_in = std::any_of(slots.begin(), slots.end(), [&](auto& slot) {
      Worker* w = RunningIn(SlotNameOf(slot));
      return w && IsHolder(*w);
    });
    if (!holder_in) {
      StopForLostState(now, out);
      return;
    }
  }
  if (!first && config_.reset_limit &&
      static_cast<int>(joined_.size()) > *config_.reset_limit) {
    Stop(now,
         "reset limit of " + std::to_string(*config_.reset_limit) +
             " exceeded (" + why + ")",
         1, out, horovod_words::ResetLimitExceeded(*config_.reset_limit));
    return;
  }
  waiting_since_.reset();

  rendezvous::GenerationPlan plan;
  plan.generation = plan_.generation + 1;
  // The workers record both on the timeline (rank 0).
  plan.reason = rendezvous::ShortReason(why);
  plan.hosts = HostsOf(slots);
  // Every rank syncs from rank 0 when any of them lacks the committed
  // state, and after a failure (ranks may have restored different commits).
  bool sync = first || members_failed;
  std::set<std::string> old_hosts, new_hosts;
  for (const auto& [name, a] : plan_.slots) {
    old_hosts.insert(name.substr(0, name.rfind(':')));
  }
  for (const SlotAssignment& slot : slots) {
    Worker* w = RunningIn(SlotNameOf(slot));
    if (!w || !IsHolder(*w)) sync = true;
    new_hosts.insert(slot.host);
  }
  // New slots' workers are made first, so that the plan names every slot's
  // process; they start after it is published.
  Actions starts;
  for (const SlotAssignment& slot : slots) {
    if (!RunningIn(SlotNameOf(slot))) {
      StartSlot(now, slot, plan.generation, starts);
    }
  }
  std::string summary;
  for (const SlotAssignment& slot : slots) {
    plan.workers[SlotNameOf(slot)] = RunningIn(SlotNameOf(slot))->id;
    rendezvous::WorkerAssignment a;
    a.generation = plan.generation;
    a.layout = slot.layout;
    a.sync = sync;
    plan.slots[SlotNameOf(slot)] = a;
    summary += (summary.empty() ? "" : ", ") +
               std::to_string(slot.layout.rank) + "=" + SlotNameOf(slot);
  }
  PushHostsUpdated push{plan.generation, {}, {}, {}};
  for (const auto& host : new_hosts) {
    if (!old_hosts.count(host)) push.added.push_back(host);
  }
  for (const auto& host : old_hosts) {
    if (!new_hosts.count(host)) push.removed.push_back(host);
  }
  plan_ = plan;
  // Workers of slots the plan leaves out learn it at their next check-in
  // and leave by themselves: from now on they are not their slots'
  // workers (a slot back before they exit gets a new one), and their exit
  // is no failure.
  for (auto& [id, w] : workers_) {
    if (w.active() && !plan_.slots.count(w.slot)) {
      w.state = Worker::State::kStopping;
    }
  }
  board_ = BoardChanged{plan.generation, {}, {}};
  for (const auto& [name, a] : plan.slots) board_.missing.insert(name);
  out.push_back(PublishGeneration{plan});
  out.push_back(Say{"generation " + std::to_string(plan.generation) + " (" +
                    why + "): " + common::Count(slots.size(), "worker") + ": " +
                    summary});
  out.insert(out.end(), starts.begin(), starts.end());
  // Running workers hear of a host change once every newcomer has checked
  // in (warm joiners). After a failure they are resetting already; workers
  // whose world this generation repeats have nothing to change.
  push_when_ready_.reset();
  if (members_failed) {
    // Their world broke: every one of them owes a check-in.
    for (auto& [id, w] : workers_) {
      if (w.active() && w.joined > 0 && plan_.slots.count(w.slot)) {
        w.told = plan_.generation;
      }
    }
    return;
  }
  bool anything_new = PlanKey(plan_) != complete_key_;
  for (const auto& [id, w] : workers_) {
    if (w.active() && w.joined > 0) {
      push.slots.push_back(w.slot);
      if (w.joined != complete_) anything_new = true;
    }
  }
  if (push.slots.empty() || !anything_new) return;
  push_when_ready_ = push;
  OnBoard(now, board_, out);  // delivers it now if no newcomer is awaited
}

void JobPolicy::CheckWaiting(TimePoint now, Actions& out) {
  if (!waiting_since_ || stopping_) return;
  int alive = 0;
  bool holder_alive = false;
  for (const auto& [id, w] : workers_) {
    if (w.active()) {
      ++alive;
      holder_alive |= IsHolder(w);
    }
  }
  // Workers the driver stopped are on their way out; decide once they left.
  if (alive == 0 && running() > 0) return;
  auto blacklisted = table_.Blacklisted(now);
  if (alive == 0 && table_.Usable(now).empty() && !blacklisted.empty() &&
      !table_.NextCooldownEnd(now)) {
    std::string hosts;
    for (const auto& host : blacklisted) {
      hosts += (hosts.empty() ? "" : ", ") + host;
    }
    Stop(now,
         "not enough slots (--min-np " + std::to_string(config_.min_np) +
             "): no worker is running and every host is blacklisted with no "
             "cooldown (" +
             hosts + ")",
         1, out, HorovodWordsForFailures());
    return;
  }
  if (!holders_.empty() && !holder_alive) StopForLostState(now, out);
}

void JobPolicy::StartSlot(TimePoint now, const SlotAssignment& slot,
                          int64_t generation, Actions& out) {
  Worker w;
  w.id = next_id_++;
  w.slot = SlotNameOf(slot);
  w.host = slot.host;
  w.index = SlotIndex(slot);
  w.start_rank = slot.layout.rank;
  w.started = now;
  workers_[w.id] = w;
  out.push_back(StartWorker{w.id, slot, generation});
}

void JobPolicy::AddSuspect(const std::string& host, bool failed) {
  if (std::find(suspect_hosts_.begin(), suspect_hosts_.end(), host) ==
      suspect_hosts_.end()) {
    suspect_hosts_.push_back(host);
    if (failed) failed_hosts_ = suspect_hosts_.size();
  }
}

JobPolicy::Worker* JobPolicy::RunningIn(const std::string& slot) {
  return const_cast<Worker*>(std::as_const(*this).RunningIn(slot));
}

const JobPolicy::Worker* JobPolicy::RunningIn(const std::string& slot) const {
  for (const auto& [id, w] : workers_) {
    if (w.active() && w.slot == slot) return &w;
  }
  return nullptr;
}

bool JobPolicy::IsHolder(const Worker& worker) const {
  return holders_.count(worker.id) != 0;
}

int JobPolicy::running() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const auto& entry) { return entry.second.alive(); }));
}

}  // namespace hvd::launcher
