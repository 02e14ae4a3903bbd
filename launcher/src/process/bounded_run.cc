#include "process/bounded_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace hvd::launcher {

using common::Result;
using common::Status;
using Clock = std::chrono::steady_clock;

Result<BoundedRunResult> RunBounded(const std::vector<std::string>& argv,
                                    const BoundedRunOptions& options) {
  if (argv.empty()) return Status::InvalidArgument("nothing to run");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::Internal("pipe failed");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Status::Internal("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own group, so a timeout kills whatever it started too; and hvdrun's
  // blocked and ignored signals must not stay so in it.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, pipe_only;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &pipe_only);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (std::string& word : words) args.push_back(word.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int spawned =
      options.search_path
          ? posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ)
          : posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (spawned != 0) {
    close(out[0]);
    close(err[0]);
    return Status::InvalidArgument(std::strerror(spawned));
  }
  int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (exit_fd < 0) {
    const int error = errno;
    kill(-pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close(out[0]);
    close(err[0]);
    return Status::Internal(std::string("pidfd_open: ") + std::strerror(error) +
                            " (hvdrun needs Linux 5.3 or newer)");
  }

  BoundedRunResult result;
  const auto deadline = Clock::now() + options.timeout;
  bool exited = false;
  // 0, 1: its stdout and stderr; 2: its exit; 3: the caller's cancel.
  pollfd fds[4] = {{out[0], POLLIN, 0},
                   {err[0], POLLIN, 0},
                   {exit_fd, POLLIN, 0},
                   {options.cancel_fd, POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0 || !exited) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    if (poll(fds, 4, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      break;
    }
    if (fds[3].fd >= 0 && (fds[3].revents & POLLIN)) {
      result.cancelled = true;
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
        std::string& text = i == 0 ? result.stdout_text : result.stderr_text;
        text.append(buffer, static_cast<size_t>(n));
        // stderr keeps its last 64 KiB: its end says why.
        if (i == 1 && text.size() > (1 << 16)) text.erase(0, text.size() / 2);
        if (i == 0 && text.size() > options.max_stdout) result.timed_out = true;
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
    if (result.timed_out) break;
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd >= 0) close(fds[i].fd);
  }
  close(exit_fd);
  if (!exited) kill(-pid, SIGKILL);
  pid_t reaped;
  while ((reaped = waitpid(pid, &result.wait_status, 0)) < 0 &&
         errno == EINTR) {
  }
  if (reaped != pid) {
    // Someone else reaped it: its exit status is unknown.
    return Status::Internal("lost the exit status of " + argv[0]);
  }
  return result;
}

}  // namespace hvd::launcher
