// horovodrun's own messages for the endings it names. hvdrun prints them
// as a line of their own before its final line, which explains the ending
// in hvd's terms (docs/errors.md, "hvdrun's exit code and last line"), so
// that log watchers and tests written for horovodrun keep finding them.
// Quoted verbatim from Horovod 0.28 (horovod/runner: gloo_run.py's error
// for failed processes, elastic/constants.py's reset limit,
// elastic/driver.py's wait for slots with common/util/timeout.py's
// ending).
#pragma once

#include <string>

namespace hvd::launcher::horovod_words {

// Workers failed and the job ended for it (all of them failed, every
// host blacklisted, nobody left to carry the state, a job that cannot
// start; a static job's failed rank).
inline constexpr char kProcessesFailed[] =
    "Horovod detected that one or more processes exited with non-zero "
    "status, thus causing the job to be terminated";

inline std::string ResetLimitExceeded(int limit) {
  return "Horovod was shutdown because number of resets during elastic job "
         "exceeded limit: " +
         std::to_string(limit);
}

// `timeout_seconds` as hvdrun prints durations ("600", "0.5").
inline std::string SlotsTimedOut(int min_np,
                                 const std::string& timeout_seconds) {
  return "Timed out waiting for minimum number of slots to become "
         "available. Please check that you have enough resources to run at "
         "least " +
         std::to_string(min_np) + " Horovod processes. Timeout after " +
         timeout_seconds + " seconds.";
}

}  // namespace hvd::launcher::horovod_words
