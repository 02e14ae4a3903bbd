#include "driver/discovery.h"

#include <sys/wait.h>

#include <sstream>

#include "hvd/common/env.h"
#include "job/host_slots.h"
#include "process/bounded_run.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<std::vector<HostSlots>> ParseDiscoveryOutput(const std::string& output,
                                                    int default_slots) {
  HostListBuilder hosts;
  std::istringstream lines(output);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = std::string(common::TrimBlanks(line));
    if (line.empty()) continue;
    auto added =
        hosts.Add(line, default_slots, "line " + std::to_string(number));
    if (!added.ok()) return added;
  }
  return hosts.Take();
}

Result<std::vector<HostSlots>> RunDiscovery(const std::string& script,
                                            int default_slots,
                                            std::chrono::milliseconds timeout,
                                            int cancel_fd) {
  BoundedRunOptions options;
  options.timeout = timeout;
  options.cancel_fd = cancel_fd;
  auto run = RunBounded({script}, options);
  if (!run.ok()) {
    return run.status().WithContext("cannot run host discovery script " +
                                    script);
  }
  if (run->cancelled) {
    return Status::Aborted("host discovery script " + script +
                           " stopped: hvdrun is shutting down");
  }
  const std::string& stderr_text = run->stderr_text;
  std::string tail = stderr_text.substr(
      stderr_text.size() > 500 ? stderr_text.size() - 500 : 0);
  if (run->timed_out) {
    return Status::Timeout("host discovery script " + script +
                           " did not finish within " +
                           std::to_string(timeout.count()) + " ms (killed)" +
                           (tail.empty() ? "" : ": " + tail));
  }
  const int status = run->wait_status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::InvalidArgument(
        "host discovery script " + script + " failed (" +
        (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status))) +
        ")" + (tail.empty() ? "" : ": " + tail));
  }
  auto hosts = ParseDiscoveryOutput(run->stdout_text, default_slots);
  if (!hosts.ok()) {
    return hosts.status().WithContext(
        "host discovery script " + script +
        (tail.empty() ? "" : " (its stderr: " + tail + ")"));
  }
  return hosts;
}

}  // namespace hvd::launcher
