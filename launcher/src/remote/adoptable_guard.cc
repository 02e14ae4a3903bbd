#include "remote/adoptable_guard.h"

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
#include <deque>

#include "hvd/common/network_interfaces.h"
#include "policy/exit_status.h"
#include "process/process_group.h"
#include "process/remote_launch.h"
#include "remote/adopt_socket.h"

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();
// What is attached waits at most this long for the last output.
constexpr std::chrono::milliseconds kLastWords{2000};
// Reading stops while this much output waits for a slow reader.
constexpr size_t kMaxPendingBytes = 1 << 20;

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int Earliest(std::initializer_list<Clock::time_point> times) {
  Clock::time_point first = kNever;
  for (auto t : times) first = std::min(first, t);
  return first == kNever ? -1 : MillisUntil(first);
}

class Guard {
 public:
  explicit Guard(AdoptableWorker w) : w_(std::move(w)) {
    SetNonBlocking(w_.out);
    SetNonBlocking(w_.err);
    SetNonBlocking(STDOUT_FILENO);
    SetNonBlocking(STDERR_FILENO);
    // Listening from the start, an adopter is taken at once, even before
    // the old link is known to be gone: it comes from the hvdrun that
    // leads now, which the old one no longer does.
    common::Status folder = EnsureAdoptSocketFolder();
    auto listener = folder.ok() ? ListenOnAdoptSocket(w_.socket_path)
                                : common::Result<int>(folder);
    if (listener.ok()) {
      listener_ = *listener;
    } else {
      std::fprintf(stderr,
                   "hvdrun (remote guard on %s): the worker cannot be "
                   "adopted: %s\n",
                   common::ThisHostName().c_str(),
                   listener.status().message().c_str());
    }
  }

  [[noreturn]] void Run() {
    OnControl(w_.control);
    while (!exited_) {
      const bool attached = link_ != Link::kNone;
      const bool read_output = !attached || pending_bytes_ < kMaxPendingBytes;
      pollfd fds[6] = {{w_.signals, POLLIN, 0},
                       {attached ? control_fd_ : -1, POLLIN, 0},
                       {read_output ? w_.out : -1, POLLIN, 0},
                       {read_output ? w_.err : -1, POLLIN, 0},
                       {attached && !wire_.empty() ? wire_fd_ : -1, POLLOUT, 0},
                       {listener_, POLLIN, 0}};
      poll(fds, 6,
           Earliest({attached ? heard_ + w_.silence : kNever, orphan_until_,
                     kill_at_}));
      const auto now = Clock::now();
      if (now >= kill_at_) {
        kill(-w_.worker, SIGKILL);
        kill_at_ = kNever;
      }
      if (now >= orphan_until_) {
        orphan_until_ = kNever;
        Stop();
      }
      if (fds[2].revents != 0) ReadOutput(w_.out, FrameKind::kStdout);
      if (fds[3].revents != 0) ReadOutput(w_.err, FrameKind::kStderr);
      if (fds[1].revents != 0) ReadControl();
      if (link_ != Link::kNone && now >= heard_ + w_.silence) {
        Detach();
      }
      if (fds[5].revents != 0) {
        int fd = AcceptAdopter(listener_);
        if (fd >= 0) Adopt(fd);
      }
      Pump();
      if (fds[0].revents != 0) ReadSignal();
    }
    Finish();
  }

 private:
  enum class Link { kSsh, kSocket, kNone };

  void OnControl(const std::string& bytes) {
    for (unsigned char byte : bytes) {
      if (byte != kHeartbeatByte && byte < 65) SignalGroup(w_.worker, byte);
    }
    heard_ = Clock::now();
  }

  void ReadControl() {
    char buffer[256];
    ssize_t n = read(control_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      OnControl(std::string(buffer, static_cast<size_t>(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      Detach();
    }
  }

  void ReadOutput(int& fd, FrameKind kind) {
    char buffer[kMaxFrameData];
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      Queue(kind, std::string(buffer, static_cast<size_t>(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      close(fd);
      fd = -1;
    }
  }

  void Queue(FrameKind kind, std::string data) {
    pending_bytes_ += data.size();
    pending_.push_back({kind, std::move(data)});
    while (link_ == Link::kNone && pending_bytes_ > kOrphanOutputBytes &&
           !pending_.empty()) {
      pending_bytes_ -= pending_.front().data.size();
      dropped_ += pending_.front().data.size();
      pending_.pop_front();
    }
  }

  // Writes what is pending to what is attached, without blocking.
  void Pump() {
    while (link_ != Link::kNone) {
      if (wire_.empty()) {
        if (pending_.empty()) return;
        Frame& next = pending_.front();
        if (link_ == Link::kSsh) {
          wire_ = std::move(next.data);
          wire_fd_ =
              next.kind == FrameKind::kStderr ? STDERR_FILENO : STDOUT_FILENO;
        } else {
          wire_ = EncodeFrame(next.kind, next.data);
          wire_fd_ = control_fd_;
        }
        pending_bytes_ -= std::min(pending_bytes_, next.data.size());
        pending_.pop_front();
      }
      ssize_t n = write(wire_fd_, wire_.data(), wire_.size());
      if (n > 0) {
        wire_.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n < 0 && errno != EAGAIN) Detach();
        return;
      }
    }
  }

  // What was attached is gone: wait for an adopter (or stop, without a
  // grace or a socket).
  void Detach() {
    if (link_ == Link::kSsh) {
      // sshd may end the session: nothing of the worker holds it.
      int null = open("/dev/null", O_RDWR | O_CLOEXEC);
      for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        if (null >= 0) dup2(null, fd);
      }
      if (null >= 0) close(null);
    } else if (link_ == Link::kSocket) {
      close(control_fd_);
    }
    link_ = Link::kNone;
    control_fd_ = -1;
    wire_.clear();
    if (stopping_) return;
    if (listener_ < 0) {
      common::Status folder = EnsureAdoptSocketFolder();
      auto listener = folder.ok() ? ListenOnAdoptSocket(w_.socket_path)
                                  : common::Result<int>(folder);
      if (!listener.ok()) {
        Stop();
        return;
      }
      listener_ = *listener;
    }
    orphan_until_ = Clock::now() + w_.adopt_grace;
  }

  void Adopt(int fd) {
    link_ = Link::kSocket;
    control_fd_ = fd;
    heard_ = Clock::now();
    orphan_until_ = kNever;
    if (dropped_ > 0) {
      pending_.push_front(
          {FrameKind::kStderr,
           "hvdrun (remote guard on " + common::ThisHostName() +
               "): " + std::to_string(dropped_) +
               " bytes of the worker's output were dropped while no hvdrun "
               "was attached\n"});
      pending_bytes_ += pending_.front().data.size();
      dropped_ = 0;
    }
  }

  void Stop() {
    if (stopping_) return;
    stopping_ = true;
    SignalGroup(w_.worker, SIGTERM);
    kill_at_ = Clock::now() + w_.stop_grace;
  }

  void ReadSignal() {
    signalfd_siginfo info;
    if (read(w_.signals, &info, sizeof(info)) != sizeof(info)) return;
    // sshd's hangup when hvdrun's session ends is what this guard
    // outlives; every other signal goes on to the worker.
    if (info.ssi_signo == SIGHUP) return;
    if (info.ssi_signo != SIGCHLD) {
      SignalGroup(w_.worker, static_cast<int>(info.ssi_signo));
      return;
    }
    int status = 0;
    if (waitpid(w_.worker, &status, WNOHANG) == w_.worker) {
      kill(-w_.worker, SIGKILL);  // whatever the worker left running
      exit_code_ = ShellExitCode(status);
      exited_ = true;
    }
  }

  // The worker has exited: its last output, then its code, to whoever is
  // attached, within kLastWords.
  [[noreturn]] void Finish() {
    const auto deadline = Clock::now() + kLastWords;
    while ((w_.out >= 0 || w_.err >= 0) && Clock::now() < deadline) {
      pollfd fds[2] = {{w_.out, POLLIN, 0}, {w_.err, POLLIN, 0}};
      if (poll(fds, 2, MillisUntil(deadline)) <= 0) break;
      if (fds[0].revents != 0) ReadOutput(w_.out, FrameKind::kStdout);
      if (fds[1].revents != 0) ReadOutput(w_.err, FrameKind::kStderr);
    }
    if (link_ == Link::kSocket) {
      Queue(FrameKind::kExit, std::to_string(exit_code_));
    }
    Pump();
    while (link_ != Link::kNone && (!wire_.empty() || !pending_.empty()) &&
           Clock::now() < deadline) {
      pollfd fd{wire_fd_, POLLOUT, 0};
      if (poll(&fd, 1, MillisUntil(deadline)) <= 0) break;
      Pump();
    }
    if (listener_ >= 0) unlink(w_.socket_path.c_str());
    _exit(exit_code_);
  }

  AdoptableWorker w_;
  Link link_ = Link::kSsh;
  int control_fd_ = STDIN_FILENO;
  int listener_ = -1;
  Clock::time_point heard_ = Clock::now();
  Clock::time_point orphan_until_ = kNever;
  Clock::time_point kill_at_ = kNever;
  bool stopping_ = false;
  std::deque<Frame> pending_;
  size_t pending_bytes_ = 0;
  size_t dropped_ = 0;
  std::string wire_;  // the bytes of the frame being written
  int wire_fd_ = -1;
  bool exited_ = false;
  int exit_code_ = 0;
};

}  // namespace

void RunAdoptableGuard(AdoptableWorker worker) {
  Guard(std::move(worker)).Run();
}

}  // namespace hvd::launcher
