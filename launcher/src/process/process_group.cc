#include "process/process_group.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace hvd::launcher {

void SignalGroup(pid_t leader, int sig) {
  kill(-leader, sig);
  if (sig != SIGKILL && sig != SIGCONT) kill(-leader, SIGCONT);
}

void ResetWorkerSignals() {
  for (int sig : {SIGPIPE, SIGINT, SIGTERM}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

void DieWithGuard(pid_t guard) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The guard may have died between fork and prctl.
  if (getppid() != guard) _exit(1);
}

void ExitLike(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
  }
  _exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1);
}

int MillisUntil(std::chrono::steady_clock::time_point when) {
  return static_cast<int>(
      std::clamp<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(
                              when - std::chrono::steady_clock::now())
                              .count(),
                          0, 3600 * 1000));
}

}  // namespace hvd::launcher
