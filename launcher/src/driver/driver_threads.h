// What the driver's one thread shares with its helpers: the Inbox their
// events come through (posting wakes the poll loop), the Cancellation that
// tells errands the job is over, and the Errands themselves (errands.h:
// pushes, probes, host checks).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "driver/errands.h"
#include "policy/job_policy.h"

namespace hvd::launcher {

// Events posted by the driver's helper threads; posting wakes the loop.
class Inbox {
 public:
  Inbox() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Inbox() { close(fd_); }
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  int fd() const { return fd_; }
  void Post(Event event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(event));
    }
    Wake();
  }
  // Also safe under other locks: it only writes the eventfd.
  void Wake() {
    uint64_t one = 1;
    ssize_t ignored = write(fd_, &one, sizeof(one));
    (void)ignored;
  }
  std::vector<Event> Take() {
    uint64_t count;
    ssize_t ignored = read(fd_, &count, sizeof(count));
    (void)ignored;
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  const int fd_;
  std::mutex mu_;
  std::vector<Event> events_;
};

// An eventfd that becomes readable, for good, once the job is over: errands
// that run a process (host checks) poll it and kill what they started.
class Cancellation {
 public:
  Cancellation() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Cancellation() { close(fd_); }
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  int fd() const { return fd_; }
  void Cancel() {
    uint64_t one = 1;
    ssize_t ignored = write(fd_, &one, sizeof(one));
    (void)ignored;
  }

 private:
  const int fd_;
};

}  // namespace hvd::launcher
