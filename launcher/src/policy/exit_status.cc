#include "policy/exit_status.h"

#include <sys/wait.h>

#include <cstring>

namespace hvd::launcher {

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  }
  int sig = WTERMSIG(wait_status);
  return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) +
         ")";
}

int ShellExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace hvd::launcher
