#include "discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "hvd/common/env.h"

extern char** environ;

namespace hvd::launcher {

using common::Result;
using common::Status;
using Clock = std::chrono::steady_clock;

namespace {

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

bool IsHostName(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_') {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<HostSlots>> ParseDiscoveryOutput(const std::string& output,
                                                    int default_slots) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::istringstream lines(output);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = Trim(line);
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("line " + std::to_string(number) + " '" +
                                     line + "': " + why);
    };
    HostSlots entry;
    entry.slots = default_slots;
    size_t colon = line.find(':');
    entry.host = line.substr(0, colon);
    if (colon != std::string::npos) {
      auto slots = common::ParseInt(line.substr(colon + 1), "slots", 1, 4096);
      if (!slots.ok()) return bad("slots must be a whole number in [1, 4096]");
      entry.slots = static_cast<int>(*slots);
    }
    if (!IsHostName(entry.host)) {
      return bad(
          "not 'host' or 'host:slots' (host names: letters, digits, "
          ". - _)");
    }
    if (!seen.insert(entry.host).second) return bad("host listed twice");
    hosts.push_back(entry);
  }
  return hosts;
}

Result<std::vector<HostSlots>> RunDiscovery(const std::string& script,
                                            int default_slots,
                                            std::chrono::milliseconds timeout,
                                            int cancel_fd) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::Internal("pipe failed");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Status::Internal("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own group, so a timeout kills whatever the script started too; and
  // hvdrun's blocked signals must not stay blocked in it.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  std::string path = script;
  char* argv[] = {path.data(), nullptr};
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, path.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (spawned != 0) {
    close(out[0]);
    close(err[0]);
    return Status::InvalidArgument("cannot run host discovery script " +
                                   script + ": " + std::strerror(spawned));
  }
  // Its exit is one more thing to wait for: the script may close its output
  // and keep running, and the deadline holds for its exit too.
  int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (exit_fd < 0) {
    const int error = errno;
    kill(-pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close(out[0]);
    close(err[0]);
    return Status::Internal("cannot watch host discovery script " + script +
                            ": pidfd_open: " + std::strerror(error) +
                            " (hvdrun needs Linux 5.3 or newer)");
  }

  std::string stdout_text, stderr_text;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false, cancelled = false, exited = false;
  // 0, 1: its stdout and stderr; 2: its exit; 3: the caller's cancel.
  pollfd fds[4] = {{out[0], POLLIN, 0},
                   {err[0], POLLIN, 0},
                   {exit_fd, POLLIN, 0},
                   {cancel_fd, POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0 || !exited) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 4, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      break;
    }
    if (fds[3].fd >= 0 && (fds[3].revents & POLLIN)) {
      cancelled = true;
      break;
    }
    if (fds[2].fd >= 0 && (fds[2].revents & POLLIN)) {
      exited = true;
      fds[2].fd = -1;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buffer[4096];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        (i == 0 ? stdout_text : stderr_text).append(buffer, n);
        if (stdout_text.size() > (1 << 20)) timed_out = true;  // runaway
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
    if (timed_out) break;
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd >= 0) close(fds[i].fd);
  }
  close(exit_fd);
  if (!exited) kill(-pid, SIGKILL);
  int status = 0;
  pid_t reaped;
  while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid) {
    // Someone else reaped it: its exit status is unknown, so is its
    // output's worth.
    return Status::Internal("lost the exit status of host discovery script " +
                            script);
  }
  if (cancelled) {
    return Status::Aborted("host discovery script " + script +
                           " stopped: hvdrun is shutting down");
  }
  std::string tail = stderr_text.substr(
      stderr_text.size() > 500 ? stderr_text.size() - 500 : 0);
  if (timed_out) {
    return Status::Timeout("host discovery script " + script +
                           " did not finish within " +
                           std::to_string(timeout.count()) + " ms (killed)" +
                           (tail.empty() ? "" : ": " + tail));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::InvalidArgument(
        "host discovery script " + script + " failed (" +
        (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status))) +
        ")" + (tail.empty() ? "" : ": " + tail));
  }
  auto hosts = ParseDiscoveryOutput(stdout_text, default_slots);
  if (!hosts.ok()) {
    return hosts.status().WithContext(
        "host discovery script " + script +
        (tail.empty() ? "" : " (its stderr: " + tail + ")"));
  }
  return hosts;
}

}  // namespace hvd::launcher
