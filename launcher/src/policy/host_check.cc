#include "policy/host_check.h"

#include <arpa/inet.h>
#include <sys/wait.h>

#include <sstream>

#include "hvd/common/env.h"
#include "job/worker_env.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

bool IsIPv4(const std::string& text) {
  in_addr ignored{};
  return inet_pton(AF_INET, text.c_str(), &ignored) == 1;
}

}  // namespace

std::string FormatHostCheckAnswer(
    const std::vector<NetworkInterface>& interfaces) {
  std::string text = std::string(kHostCheckMarker) + "\n";
  for (const NetworkInterface& it : interfaces) {
    text += it.name + " " + it.address + "\n";
  }
  return text;
}

Result<std::vector<NetworkInterface>> ParseHostCheckAnswer(
    const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  bool marked = false;
  std::vector<NetworkInterface> interfaces;
  while (std::getline(lines, line)) {
    line = std::string(common::TrimBlanks(line));
    if (!marked) {
      marked = line == kHostCheckMarker;
      continue;
    }
    if (line.empty()) continue;
    std::istringstream words(line);
    NetworkInterface it;
    std::string extra;
    if (!(words >> it.name >> it.address) || (words >> extra) ||
        !IsIPv4(it.address)) {
      return Status::InvalidArgument(
          "its answer has a line that is not "
          "'interface IPv4-address': '" +
          line.substr(0, 80) + "'");
    }
    interfaces.push_back(it);
  }
  if (!marked) {
    return Status::InvalidArgument(
        "it did not answer as hvdrun's host check does" +
        (text.empty() ? std::string(" (no output)")
                      : ": '" + LastLine(text, 80) + "'"));
  }
  return interfaces;
}

std::optional<std::string> HostKeyDistrust(const std::string& ssh_stderr) {
  if (ssh_stderr.find("Host key verification failed") == std::string::npos) {
    return std::nullopt;
  }
  if (ssh_stderr.find("REMOTE HOST IDENTIFICATION HAS CHANGED") !=
      std::string::npos) {
    return std::string(
        "its host key is not the one your known_hosts holds for it (ssh: "
        "Host key verification failed): it was reinstalled, or something "
        "else answers at its address");
  }
  return std::string(
      "ssh does not know its host key (ssh: Host key verification "
      "failed)");
}

Result<std::vector<NetworkInterface>> JudgeHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    int64_t timeout_seconds, const SshOutcome& outcome,
    std::string_view tool_name) {
  const std::string tool(tool_name);
  const std::string why = LastLine(outcome.stderr_text);
  const std::string unreachable =
      "cannot reach host " + host + " over " + tool + ": ";
  if (outcome.timed_out) {
    return Status::Timeout(unreachable + "no answer within " +
                           std::to_string(timeout_seconds) +
                           " s (--start-timeout); " + tool + " was killed" +
                           (why.empty() ? "" : " (it said: " + why + ")"));
  }
  const int status = outcome.wait_status;
  if (!WIFEXITED(status)) {
    return Status::Transport(unreachable + tool + " was killed by signal " +
                             std::to_string(WTERMSIG(status)));
  }
  const int code = WEXITSTATUS(status);
  if (code == 255 && tool == "ssh") {  // ssh's own: connect, keys
    if (auto distrust = HostKeyDistrust(outcome.stderr_text)) {
      return Status::Unauthenticated(
          unreachable + *distrust +
          "; no launch message was sent to it. Check the host's key "
          "fingerprint with its administrator, then add it to your "
          "known_hosts (ssh-keyscan " +
          host +
          " >> ~/.ssh/known_hosts), or pass --ssh-accept-new-host-keys to "
          "let ssh record a host it has never seen");
    }
    return Status::Transport(unreachable +
                             (why.empty() ? "ssh exited with code 255" : why));
  }
  if (code == 127) {  // the remote shell found no such command
    return Status::NotFound("hvdrun is not at " + hvdrun_path + " on host " +
                            host +
                            ": install hvd at the same path on every host (a "
                            "shared home does that)");
  }
  const std::string failed = "the host check on host " + host + " failed: ";
  if (code != 0) {
    return Status::InvalidArgument(failed + hvdrun_path + " " + kHostCheckFlag +
                                   " exited with code " + std::to_string(code) +
                                   (why.empty() ? "" : ": " + why));
  }
  auto interfaces = ParseHostCheckAnswer(outcome.stdout_text);
  if (!interfaces.ok()) {
    return Status::InvalidArgument(failed + interfaces.status().message());
  }
  return interfaces;
}

std::optional<std::string> MissingInterfaces(
    const std::string& host, const std::vector<std::string>& wanted,
    const std::vector<NetworkInterface>& have, bool loopback_counts) {
  if (wanted.empty() ||
      common::FirstListedInterface(
          wanted, loopback_counts ? have : common::WithoutLoopback(have))) {
    return std::nullopt;
  }
  std::string list;
  for (const std::string& name : wanted) {
    list += (list.empty() ? "" : ",") + name;
  }
  // Only a loopback interface of the list is here, which peers on other
  // machines could not reach.
  const bool only_loopback =
      common::FirstListedInterface(wanted, have).has_value();
  return "host " + host + " has none of the network interfaces " + list +
         " (--network-interfaces) with an IPv4 address" +
         (only_loopback ? " but loopback, which does not count when the job "
                          "spans machines"
                        : "") +
         "; it has: " + common::InterfaceNames(have);
}

std::string LastLine(const std::string& text, size_t max_chars) {
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line)) {
    line = std::string(common::TrimBlanks(line));
    if (!line.empty()) last = line;
  }
  if (last.size() > max_chars)
    last = "..." + last.substr(last.size() - max_chars);
  return last;
}

}  // namespace hvd::launcher
