// JobPolicy's rule for a job that cannot start (job_policy.h, the elastic
// rules): worker starts that fail the same way before any worker checked
// in to the rendezvous are counted, and after kStartAttempts of them in a
// row, with no worker left that could still check in, the job stops with
// that failure instead of restarting the same fault after every cooldown.
#include "policy/horovod_words.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

void JobPolicy::CountFailedStart(const Worker& worker,
                                 const std::string& what) {
  // Once any worker checked in the job has started: its failures are
  // resets, bounded by --reset-limit.
  if (worker.joined > 0 || !joined_.empty()) return;
  if (what == failed_start_) {
    ++failed_starts_;
  } else {
    failed_start_ = what;
    failed_starts_ = 1;
  }
}

bool JobPolicy::StopIfCannotStart(TimePoint now, Actions& out) {
  if (!joined_.empty() || failed_starts_ < kStartAttempts) return false;
  // A worker still starting may yet check in: decide when it has.
  for (const auto& [id, w] : workers_) {
    if (w.active()) return false;
  }
  Stop(now,
       "the job cannot start: " + std::to_string(failed_starts_) +
           " worker starts in a row failed the same way before any worker "
           "checked in to the rendezvous (hvd.init()): " +
           failed_start_ + "; see the workers' output above",
       exit_code_, out, HorovodWordsForFailures());
  return true;
}

std::string JobPolicy::HorovodWordsForFailures() const {
  return failures_.empty() ? std::string() : horovod_words::kProcessesFailed;
}

}  // namespace hvd::launcher
