#include "worker_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <climits>

#include "guard.h"
#include "host_address.h"
#include "hvd/common/env_vars.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<LaunchContext> MakeLaunchContext(DriverEndpoint endpoint) {
  LaunchContext context;
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  context.hvdrun_path = *self;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return Status::Internal("cannot read the working directory");
  }
  context.working_dir = cwd;
  context.endpoint = std::move(endpoint);
  return context;
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  int sig = WTERMSIG(status);
  return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) +
         ")";
}

Result<WorkerProcess> LaunchWorker(const SlotAssignment& slot,
                                   const LaunchContext& context,
                                   const LaunchConfig& config) {
  EnvList env = WorkerEnvironment(slot, context.endpoint, config);
  std::vector<std::string> argv;
  if (IsLocalHost(slot.host)) {
    argv = GuardCommand(context.hvdrun_path, config.stop_grace, false,
                        config.command);
  } else {
    argv = GuardCommand(context.hvdrun_path, config.stop_grace, true,
                        SshCommand(slot, env, config, context.working_dir));
    env = {{common::env_vars::kHvdSecretKey, context.endpoint.secret}};
  }
  auto worker = SpawnGuard(slot, argv, env);
  if (!worker.ok()) {
    return worker.status().WithContext(
        "cannot start rank " + std::to_string(slot.rank) + " on " + slot.host);
  }
  return worker;
}

}  // namespace hvd::launcher
