#include "ops/shm/host_barrier.h"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace hvd::runtime::shm {

using common::Status;

namespace {

// Not FUTEX_PRIVATE: the word is shared between processes.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               std::chrono::microseconds at_most) {
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(at_most.count() / 1000000);
  timeout.tv_nsec = static_cast<long>(at_most.count() % 1000000) * 1000;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected,
          &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX,
          nullptr, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A peer that is running arrives within a few microseconds; one that is
// not (more ranks than cores) needs this core, hence the yields.
constexpr int kSpins = 256;
constexpr int kYields = 64;
// A sleeping waiter looks at its flags and the clock this often even when
// nobody wakes it (a peer killed while others wait never will).
constexpr std::chrono::microseconds kNap{2000};

}  // namespace

Status HostBarrier::Wait(const std::string& what) {
  // A barrier the peers reach in step never sleeps, so an abort or a
  // broken segment is looked at before counting: else an aborted
  // generation's collectives go on for as long as its peers keep pace.
  if (aborted_->load(std::memory_order_acquire)) return Aborted(what);
  if (words_->broken.load(std::memory_order_acquire) != 0) return Broken(what);
  const uint32_t phase = words_->phase.load(std::memory_order_acquire);
  if (words_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(size_)) {
    // The reset happens before the release below, so a rank that sees the
    // new phase and enters the next barrier counts from zero.
    words_->arrived.store(0, std::memory_order_relaxed);
    words_->phase.store(phase + 1, std::memory_order_release);
    FutexWakeAll(&words_->phase);
    return Status::Ok();
  }
  auto passed = [&] {
    return words_->phase.load(std::memory_order_acquire) != phase;
  };
  for (int i = 0; i < kSpins + kYields; ++i) {
    if (passed()) return Status::Ok();
    if (i < kSpins) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!passed()) {
    if (words_->broken.load(std::memory_order_acquire) != 0) {
      return Broken(what);
    }
    for (size_t k = 0; k < pidfds_.size(); ++k) {
      if (pidfds_[k] < 0) continue;
      pollfd exited{pidfds_[k], POLLIN, 0};
      if (poll(&exited, 1, 0) > 0) {
        return Failed(Status::Transport(
            what + ": local rank " + std::to_string(k) +
            " on this host exited (hvdrun's output says why)"));
      }
    }
    if (aborted_->load(std::memory_order_acquire)) return Aborted(what);
    if (std::chrono::steady_clock::now() > deadline) {
      return Failed(Status::Timeout(
          what +
          ": Timed out waiting for a rank on this host in the "
          "shared-memory stage (the Gloo timeout, --gloo-timeout-seconds / "
          "HOROVOD_GLOO_TIMEOUT_SECONDS: it may be hung, stopped or "
          "overloaded)"));
    }
    FutexWait(&words_->phase, phase, kNap);
  }
  return Status::Ok();
}

void HostBarrier::WatchPeers(std::vector<int> pidfds) {
  pidfds_ = std::move(pidfds);
}

HostBarrier::~HostBarrier() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
}

Status HostBarrier::Broken(const std::string& what) {
  return Failed(Status::Transport(
      what +
      ": another rank on this host failed in the same collective (it most "
      "likely exited; hvdrun's output names it)"));
}

Status HostBarrier::Aborted(const std::string& what) {
  return Failed(
      Status::Transport(what + ": this generation's collectives were aborted"));
}

Status HostBarrier::Failed(Status status) {
  Break();
  return status;
}

void HostBarrier::Break() {
  words_->broken.store(1, std::memory_order_release);
  WakeAll();
}

void HostBarrier::WakeAll() { FutexWakeAll(&words_->phase); }

}  // namespace hvd::runtime::shm
