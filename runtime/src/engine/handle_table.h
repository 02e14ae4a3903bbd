// Handles: how a caller waits for a collective the background thread runs.
// The background thread completes a handle with its OpResult; the caller
// polls it or waits on it, and Wait hands the result over and forgets it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "hvd/runtime/types.h"

namespace hvd::runtime {

class HandleTable {
 public:
  Handle Create();
  void Complete(Handle handle, OpResult result);
  // Completes a fused unit's handles at once: one lock and one wake-up of
  // the waiting threads instead of one per tensor.
  void CompleteAll(const std::vector<Handle>& handles,
                   std::vector<OpResult> results);
  common::Result<bool> Poll(Handle handle);
  common::Result<OpResult> Wait(Handle handle);

  // The caller has put new work in a tensor queue (after Create).
  void Enqueued();
  // Whether this rank is stuck in a wait as far as the background thread
  // can tell: some thread is blocked in Wait() now, and no handle was
  // enqueued or completed since the caller's previous call with the same
  // `seen` (which this updates). A caller that asks before popping its
  // queue's requests then knows it has popped every request this rank
  // made before the wait (deadlock_detector.h).
  bool QuietWait(uint64_t* seen);

 private:
  std::mutex mu_;
  // Threads blocked in Wait() on a handle not completed yet.
  int waiters_ = 0;
  // Counts enqueues and completions.
  uint64_t activity_ = 0;
  std::condition_variable completed_;
  Handle next_ = 1;
  std::unordered_map<Handle, std::optional<OpResult>> results_;
};

}  // namespace hvd::runtime
