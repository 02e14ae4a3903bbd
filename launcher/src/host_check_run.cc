#include "host_check_run.h"

#include <algorithm>
#include <cstdio>

#include "bounded_run.h"
#include "host_address.h"
#include "host_check.h"
#include "ssh.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<std::vector<NetworkInterface>> RunHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd) {
  if (IsLocalHost(host)) return common::LocalInterfaces();
  return RunSshHostCheck(host, hvdrun_path, config, cancel_fd);
}

Result<std::vector<NetworkInterface>> RunSshHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd) {
  std::vector<std::string> argv = SshArgs(host, config);
  argv.push_back(HostCheckRemoteCommand(hvdrun_path));
  BoundedRunOptions options;
  options.timeout = config.start_timeout + kHostCheckKillMargin;
  options.cancel_fd = cancel_fd;
  options.search_path = true;
  auto run = RunBounded(argv, options);
  if (!run.ok()) {
    return run.status().WithContext("cannot check host " + host +
                                    ": cannot run ssh");
  }
  if (run->cancelled) {
    return Status::Aborted("the check of host " + host +
                           " stopped: hvdrun is shutting down");
  }
  SshOutcome outcome{run->wait_status, run->timed_out, run->stdout_text,
                     run->stderr_text};
  return JudgeHostCheck(host, hvdrun_path,
                        std::max<int64_t>(1, config.start_timeout.count()),
                        outcome);
}

int HostCheckMain() {
  std::string answer = FormatHostCheckAnswer(common::LocalInterfaces());
  std::fwrite(answer.data(), 1, answer.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace hvd::launcher
