// JobPolicy's endings (job_policy.h): a stop asked for by a signal or a
// failure, its escalation (SIGTERM, then SIGKILL after the stop grace, then
// giving up on workers that ignore even that), success, and the final
// message that sums the job's failures up.
#include <signal.h>

#include <cstring>
#include <map>

#include "hvd/common/logging.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

void JobPolicy::OnSignal(TimePoint now, int signal, Actions& out) {
  if (stopping_) {
    // A second signal: no more grace.
    SignalAll(SIGKILL, out);
    kill_at_.reset();
    if (!give_up_at_) give_up_at_ = now + config_.reap_grace;
    return;
  }
  out.push_back(Say{std::string("received ") + strsignal(signal) +
                    "; stopping the workers"});
  stopping_ = true;
  stop_reason_ = std::string("stopped by ") + strsignal(signal);
  exit_code_ = 128 + signal;
  // The signal itself, so that SIGINT reaches Python as KeyboardInterrupt.
  SignalAll(signal, out);
  kill_at_ = now + config_.stop_grace;
}

void JobPolicy::Stop(TimePoint now, const std::string& failure, int exit_code,
                     Actions& out, const std::string& horovod_words) {
  if (stopping_) return;
  stopping_ = true;
  stop_reason_ = failure;
  horovod_words_ = horovod_words;
  exit_code_ = exit_code;
  push_when_ready_.reset();
  if (running() > 0) {
    if (!failure.empty()) {
      out.push_back(
          Say{failure + "; stopping " + common::Count(running(), "worker")});
    }
    SignalAll(SIGTERM, out);
    kill_at_ = now + config_.stop_grace;
  }
}

void JobPolicy::StopForLostState(TimePoint now, Actions& out) {
  Stop(now,
       "no slot of generation " + std::to_string(complete_) +
           " is left to carry the committed state; the job cannot go on",
       1, out, HorovodWordsForFailures());
}

void JobPolicy::Succeed(TimePoint now, Actions& out) {
  succeeded_ = true;
  // Workers of newer slots still around are not needed any more.
  Stop(now, "", 0, out);
}

void JobPolicy::SignalAll(int signal, Actions& out) {
  for (auto& [id, w] : workers_) {
    if (w.alive()) out.push_back(SignalWorker{id, signal});
  }
}

void JobPolicy::MaybeFinish(Actions& out) {
  if (finished_ || running() > 0) return;
  if (awaiting_checks_ && !stopping_) return;  // static: checking hosts
  if (config_.elastic && !stopping_) return;   // waiting for slots
  finished_ = true;
  if (succeeded_) {
    out.push_back(
        Say{"every rank of the last generation finished; job "
            "succeeded after " +
            common::Count(resets(), "reset")});
    out.push_back(Finish{0, {}});
    return;
  }
  if (!stopping_) {  // a static job whose workers all exited 0
    out.push_back(Finish{0, {}});
    return;
  }
  const int code = exit_code_ != 0 ? exit_code_ : 1;
  std::string unstoppable;
  for (size_t i = failed_hosts_; i < suspect_hosts_.size(); ++i) {
    unstoppable += (unstoppable.empty() ? "" : ", ") + suspect_hosts_[i];
  }
  if (!unstoppable.empty()) {
    unstoppable = "; workers on " + unstoppable +
                  " did not stop when told (host lost or cut off?)";
  }
  if (!horovod_words_.empty()) out.push_back(Say{horovod_words_});
  out.push_back(Say{stop_reason_ + FailureSummary() + unstoppable +
                    "; job failed (exit code " + std::to_string(code) + ")"});
  out.push_back(Finish{code, suspect_hosts_});
}

std::string JobPolicy::FailureSummary() const {
  if (failures_.empty()) return "";
  std::string text = "; last failure: " + failures_.back().second;
  int64_t newest = 0;
  for (const auto& [generation, what] : failures_) {
    newest = std::max(newest, generation);
  }
  std::vector<std::string> of_newest;
  for (const auto& [generation, what] : failures_) {
    if (generation == newest) of_newest.push_back(what);
  }
  if (of_newest.size() > 1 || failures_.size() > 1) {
    text += newest > 0
                ? "; failures in generation " + std::to_string(newest) + ": "
                : "; failures before any generation was joined: ";
    for (size_t i = 0; i < of_newest.size(); ++i) {
      text += (i ? ", " : "") + of_newest[i];
    }
  }
  return text;
}

void JobPolicy::EscalateStop(TimePoint now, Actions& out) {
  if (kill_at_ && now >= *kill_at_) {
    // Workers that ignore a stop are hung, or on a host that no longer
    // answers: name them, and their hosts.
    std::map<std::string, std::vector<int>> ranks_by_host;
    for (const auto& [id, w] : workers_) {
      if (w.alive()) ranks_by_host[w.host].push_back(w.start_rank);
    }
    std::string which;
    for (const auto& [host, ranks] : ranks_by_host) {
      std::string list;
      for (int rank : ranks) {
        list += (list.empty() ? "" : ", ") + std::to_string(rank);
      }
      which += (which.empty() ? "" : "; ") +
               std::string(ranks.size() > 1 ? "ranks " : "rank ") + list +
               " on host " + host;
      AddSuspect(host, false);
    }
    out.push_back(Say{
        "workers still running " + common::DecimalSeconds(config_.stop_grace) +
        " s after they were told to stop (" + which + "): killing them"});
    SignalAll(SIGKILL, out);
    kill_at_.reset();
    give_up_at_ = now + config_.reap_grace;
  }
  if (give_up_at_ && now >= *give_up_at_) {
    out.push_back(Say{common::Count(running(), "worker") +
                      " did not exit after SIGKILL; leaving them"});
    for (auto& [id, w] : workers_) {
      if (w.alive()) w.state = Worker::State::kExited;
    }
  }
}

}  // namespace hvd::launcher
