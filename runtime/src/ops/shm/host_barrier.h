// The rendezvous of a host's local ranks inside their shared segment: a
// counting barrier on process-shared atomics, waited on by spinning
// briefly (a peer usually arrives within microseconds) and then sleeping
// on a futex. Every wait is bounded: by the deadline, by the segment's
// "broken" flag (a local rank gave up: the others follow at once instead
// of waiting out the timeout), by this process's abort flag, and by the
// local peers' lives (a pidfd per peer: a peer killed by a signal never
// sets the flag, and in a static job nobody sends the Abort).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::runtime::shm {

// At the start of the segment, zeroed by its creator. Its own cache lines:
// the slots after it are written constantly.
struct alignas(64) BarrierWords {
  std::atomic<uint32_t> arrived{0};
  alignas(64) std::atomic<uint32_t> phase{0};  // the futex word
  alignas(64) std::atomic<uint32_t> broken{0};
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

class HostBarrier {
 public:
  // `aborted` is this process's flag (set by Break's caller on Abort).
  HostBarrier(BarrierWords* words, int size, std::chrono::milliseconds timeout,
              const std::atomic<bool>* aborted)
      : words_(words), size_(size), timeout_(timeout), aborted_(aborted) {}

  // Returns when all `size` local ranks have called Wait as often as this
  // one; kTimeout, kTransport (a peer broke the segment) or kAborted
  // otherwise, naming `what`.
  common::Status Wait(const std::string& what);
  // Watches the peers' processes from now on: `pidfds[k]` of local rank k,
  // or -1 (this rank, or a peer that cannot be watched); closed by the
  // destructor.
  void WatchPeers(std::vector<int> pidfds);
  ~HostBarrier();
  HostBarrier(const HostBarrier&) = delete;
  HostBarrier& operator=(const HostBarrier&) = delete;

  // Marks the segment broken and wakes every waiter on the host.
  void Break();
  // Wakes this host's waiters so that they look at their flags again.
  void WakeAll();

 private:
  // Breaks the segment (the others stop waiting too) and returns `status`.
  common::Status Failed(common::Status status);
  // Failed() for a segment a peer broke, and for this process's abort.
  common::Status Broken(const std::string& what);
  common::Status Aborted(const std::string& what);

  BarrierWords* words_;
  int size_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>* aborted_;
  std::vector<int> pidfds_;
};

}  // namespace hvd::runtime::shm
