#include "remote/ssh.h"

#include <algorithm>

#include "job/worker_env.h"
#include "remote/host_address.h"

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
      "ConnectTimeout=" + std::to_string(connect_seconds),
      "-o",
      "ServerAliveInterval=" + std::to_string(kSshAliveInterval.count()),
      "-o",
      "ServerAliveCountMax=" + std::to_string(kSshAliveCountMax)};
  // Host keys are checked as the user's ssh configuration says; the flag
  // only lets ssh learn a host it has never seen (never a changed key).
  if (config.ssh_accept_new_host_keys) {
    ssh.insert(ssh.end(), {"-o", "StrictHostKeyChecking=accept-new"});
  }
  if (config.ssh_port != 0) {
    ssh.insert(ssh.end(), {"-p", std::to_string(config.ssh_port)});
  }
  if (!config.ssh_identity_file.empty()) {
    ssh.insert(ssh.end(), {"-i", config.ssh_identity_file});
  }
  // "--": a host name that starts with '-' is ssh's destination, never an
  // option (-oProxyCommand=... would run a command here). Host names are
  // also refused with a leading '-' where they enter (job/host_slots.h);
  // this holds for any caller.
  ssh.insert(ssh.end(), {"--", host});
  return ssh;
}

namespace {

class SshBackend : public LaunchBackend {
 public:
  explicit SshBackend(const LaunchConfig& config) : config_(config) {}

  bool RunsHere(const std::string& host) const override {
    return IsLocalHost(host);
  }

  common::Result<std::vector<std::string>> Command(
      const std::string& host, const std::vector<std::string>& words,
      const std::string&) const override {
    std::vector<std::string> argv = SshArgs(host, config_);
    argv.push_back("exec " + ShellWords(words));
    return argv;
  }

  const char* tool() const override { return "ssh"; }

 private:
  const LaunchConfig& config_;
};

}  // namespace

std::unique_ptr<LaunchBackend> MakeSshBackend(const LaunchConfig& config) {
  return std::make_unique<SshBackend>(config);
}

}  // namespace hvd::launcher
