#include "process/guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "process/process_group.h"
#include "process/remote_launch.h"

namespace hvd::launcher {

using Clock = std::chrono::steady_clock;

std::vector<std::string> GuardCommand(const std::string& hvdrun_path,
                                      std::chrono::milliseconds grace,
                                      GuardMode mode,
                                      const std::vector<std::string>& command) {
  const char* mode_word = "-";
  if (mode == GuardMode::kRemote) mode_word = "remote";
  if (mode == GuardMode::kAdoptableHere) mode_word = "adoptable";
  std::vector<std::string> argv = {
      hvdrun_path, kGuardFlag, std::to_string(grace.count()), mode_word, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

namespace {

std::string ReadAll(int fd) {
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

// Bytes for ssh's standard input, written without blocking: ssh may not
// read (not connected yet, or its link is down), and the guard must still
// act on the driver's signals and on the driver's death.
class RemoteInput {
 public:
  explicit RemoteInput(int fd) : fd_(fd) {
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  bool open() const { return fd_ >= 0; }
  bool wants_to_write() const { return open() && !pending_.empty(); }
  int fd() const { return fd_; }
  void Queue(const std::string& bytes) {
    if (open()) pending_ += bytes;
  }
  // A heartbeat only when nothing else waits: queued bytes prove the same.
  void Heartbeat() {
    if (open() && pending_.empty()) Queue(std::string(1, kHeartbeatByte));
    Flush();
  }
  void Flush() {
    while (wants_to_write()) {
      ssize_t n = write(fd_, pending_.data(), pending_.size());
      if (n > 0) {
        pending_.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n < 0 && errno != EAGAIN) Close();  // ssh is gone
        return;
      }
    }
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    pending_.clear();
  }

 private:
  int fd_;
  std::string pending_;
};

}  // namespace

int GuardMain(int argc, char** argv) {
  if (argc < 6 || std::strcmp(argv[4], "--") != 0) {
    std::fprintf(stderr, "hvdrun guard: bad arguments (internal use only)\n");
    return 2;
  }
  const auto grace = std::chrono::milliseconds(std::atoi(argv[2]));
  // The child outlives this guard when the driver dies (guard.h).
  const bool lets_go = std::strcmp(argv[3], "adoptable") == 0;
  const bool remote = lets_go || std::strcmp(argv[3], "remote") == 0;
  // Out of hvdrun's process group, so a terminal's Ctrl-C reaches only
  // hvdrun, which forwards it exactly once.
  setpgid(0, 0);

  // Before any descriptor is made: without a launch message (an adopting
  // end's) the launch descriptor is not open, and must not be taken for
  // one made here.
  std::string launch;
  if (remote) {
    launch = ReadAll(kGuardLaunchFd);
    close(kGuardLaunchFd);
  }
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  int stdin_pipe[2] = {-1, -1};
  if (remote && pipe2(stdin_pipe, O_CLOEXEC) != 0) return 1;
  const pid_t guard = getpid();
  pid_t child = fork();
  if (child < 0) {
    std::perror("hvdrun guard: fork");
    return 1;
  }
  if (child == 0) {
    DieWithGuard(guard);
    setpgid(0, 0);
    ResetWorkerSignals();
    if (remote) dup2(stdin_pipe[0], STDIN_FILENO);
    close(kGuardControlFd);
    execvp(argv[5], argv + 5);
    std::fprintf(stderr, "hvdrun: cannot run '%s': %s\n", argv[5],
                 std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);  // either side may win the race; both agree
  std::optional<RemoteInput> remote_input;
  if (remote) {
    close(stdin_pipe[0]);
    remote_input.emplace(stdin_pipe[1]);
    remote_input->Queue(launch);
    remote_input->Flush();
  }

  // When the child's group gets SIGKILL; max(): not due.
  Clock::time_point kill_at = Clock::time_point::max();
  // A signal for the worker: over ssh it becomes a byte for the remote
  // guard; a SIGKILL also ends ssh soon, in case its link is gone.
  auto forward = [&](int sig) {
    if (!remote) {
      SignalGroup(child, sig);
      return;
    }
    remote_input->Queue(std::string(1, static_cast<char>(sig)));
    remote_input->Flush();
    if (sig == SIGKILL) kill_at = std::min(kill_at, Clock::now() + grace / 5);
  };
  bool driver_alive = true;
  Clock::time_point next_heartbeat = Clock::now() + kHeartbeatInterval;
  while (true) {
    pollfd fds[3] = {
        {signals, POLLIN, 0},
        {driver_alive ? kGuardControlFd : -1, POLLIN, 0},
        {remote_input && remote_input->wants_to_write() ? remote_input->fd()
                                                        : -1,
         POLLOUT, 0}};
    int timeout = -1;
    if (kill_at != Clock::time_point::max()) timeout = MillisUntil(kill_at);
    if (remote_input && remote_input->open()) {
      int heartbeat = MillisUntil(next_heartbeat);
      timeout = timeout < 0 ? heartbeat : std::min(timeout, heartbeat);
    }
    poll(fds, 3, timeout);
    const auto now = Clock::now();
    if (now >= kill_at) {  // grace over
      kill(-child, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    if (remote_input && now >= next_heartbeat) {
      remote_input->Heartbeat();
      next_heartbeat = now + kHeartbeatInterval;
    }
    if (fds[2].revents != 0) remote_input->Flush();
    if (fds[1].revents != 0) {
      unsigned char sig = 0;
      ssize_t n = read(kGuardControlFd, &sig, 1);
      if (n == 1) {
        forward(sig);
      } else if (n == 0 || errno != EINTR) {
        // The driver is gone: stop the worker, locally or by closing what
        // the remote guard reads.
        driver_alive = false;
        if (lets_go) {
          remote_input->Close();
          _exit(0);
        }
        if (remote) {
          remote_input->Close();
        } else {
          SignalGroup(child, SIGTERM);
        }
        kill_at = Clock::now() + grace;
      }
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      if (read(signals, &info, sizeof(info)) != sizeof(info)) continue;
      if (info.ssi_signo != SIGCHLD) {
        forward(static_cast<int>(info.ssi_signo));
        continue;
      }
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) {
        kill(-child, SIGKILL);  // whatever the worker left running
        ExitLike(status);
      }
    }
  }
}

}  // namespace hvd::launcher
