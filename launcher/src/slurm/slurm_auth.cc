#include "slurm/slurm_auth.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "hvd/common/env.h"
#include "process/bounded_run.h"

namespace hvd::launcher {

namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The socket option of an AuthInfo value ("socket=/p,ttl=60"), if any.
std::optional<std::string> SocketOption(std::string_view value) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  std::optional<std::string> socket;
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view option = common::TrimBlanks(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view()
                                            : value.substr(comma + 1);
    size_t eq = option.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view path = common::TrimBlanks(option.substr(eq + 1));
    if (EqualsIgnoringCase(common::TrimBlanks(option.substr(0, eq)),
                           "socket") &&
        !path.empty()) {
      socket = std::string(path);
    }
  }
  return socket;
}

}  // namespace

std::optional<std::string> MungeSocketFromSlurmConfig(std::string_view text) {
  std::optional<std::string> socket;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
    line = common::TrimBlanks(line.substr(0, line.find('#')));
    size_t eq = line.find('=');
    if (eq == std::string_view::npos ||
        !EqualsIgnoringCase(common::TrimBlanks(line.substr(0, eq)),
                            "AuthInfo")) {
      continue;
    }
    // A later line replaces an earlier one, options and all.
    socket = SocketOption(common::TrimBlanks(line.substr(eq + 1)));
  }
  return socket;
}

std::string SlurmMungeSocket(std::chrono::milliseconds timeout) {
  static std::mutex mutex;
  static std::optional<std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (known) return *known;
  std::optional<std::string> socket;
  bool answered = false;
  BoundedRunOptions options;
  options.timeout = timeout;
  options.search_path = true;
  auto run = RunBounded({"scontrol", "show", "config"}, options);
  if (run.ok() && !run->timed_out && WIFEXITED(run->wait_status) &&
      WEXITSTATUS(run->wait_status) == 0) {
    answered = true;
    socket = MungeSocketFromSlurmConfig(run->stdout_text);
  }
  if (!answered) {
    // No slurmctld answer: the configuration file this node's commands
    // read.
    const char* conf = std::getenv("SLURM_CONF");
    std::ifstream file(
        conf != nullptr && *conf != '\0' ? conf : "/etc/slurm/slurm.conf");
    std::stringstream text;
    text << file.rdbuf();
    if (!file) return "";  // asked again next time
    socket = MungeSocketFromSlurmConfig(text.str());
  }
  known = socket.value_or("");
  return *known;
}

}  // namespace hvd::launcher
