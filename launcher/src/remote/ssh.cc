#include "remote/ssh.h"

#include <algorithm>

namespace hvd::launcher {

std::vector<std::string> SshArgs(const std::string& host,
                                 const LaunchConfig& config) {
  // ConnectTimeout: an unreachable host fails within the start timeout
  // instead of TCP's minutes of retries.
  const int64_t connect_seconds =
      std::max<int64_t>(1, config.start_timeout.count());
  std::vector<std::string> ssh = {
      "ssh",
      "-o",
      "BatchMode=yes",
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "ConnectTimeout=" + std::to_string(connect_seconds),
      "-o",
      "ServerAliveInterval=" + std::to_string(kSshAliveInterval.count()),
      "-o",
      "ServerAliveCountMax=" + std::to_string(kSshAliveCountMax)};
  if (config.ssh_port != 0) {
    ssh.insert(ssh.end(), {"-p", std::to_string(config.ssh_port)});
  }
  if (!config.ssh_identity_file.empty()) {
    ssh.insert(ssh.end(), {"-i", config.ssh_identity_file});
  }
  ssh.push_back(host);
  return ssh;
}

}  // namespace hvd::launcher
