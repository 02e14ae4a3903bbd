#include "remote/host_check_run.h"

#include <algorithm>
#include <cstdio>

#include "policy/host_check.h"
#include "process/bounded_run.h"
#include "remote/launch_backend.h"
#include "remote/srun.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<std::vector<NetworkInterface>> RunHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd) {
  if (MakeLaunchBackend(config)->RunsHere(host)) {
    return common::LocalInterfaces();
  }
  return RunRemoteHostCheck(host, hvdrun_path, config, cancel_fd);
}

Result<std::vector<NetworkInterface>> RunRemoteHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd) {
  const std::unique_ptr<LaunchBackend> backend = MakeLaunchBackend(config);
  auto argv =
      backend->Command(host, {hvdrun_path, kHostCheckFlag}, kHostCheckStepName);
  if (!argv.ok()) return argv.status();
  BoundedRunOptions options;
  options.timeout = config.start_timeout + kHostCheckKillMargin;
  options.cancel_fd = cancel_fd;
  options.search_path = true;
  auto run = RunBounded(*argv, options);
  if (!run.ok()) {
    return run.status().WithContext("cannot check host " + host +
                                    ": cannot run " + backend->tool());
  }
  if (run->cancelled) {
    return Status::Aborted("the check of host " + host +
                           " stopped: hvdrun is shutting down");
  }
  SshOutcome outcome{run->wait_status, run->timed_out, run->stdout_text,
                     run->stderr_text};
  return JudgeHostCheck(host, hvdrun_path,
                        std::max<int64_t>(1, config.start_timeout.count()),
                        outcome, backend->tool());
}

int HostCheckMain() {
  std::string answer = FormatHostCheckAnswer(common::LocalInterfaces());
  std::fwrite(answer.data(), 1, answer.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace hvd::launcher
