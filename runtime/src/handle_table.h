// Handles: how a caller waits for a collective the background thread runs.
// The background thread completes a handle with its OpResult; the caller
// polls it or waits on it, and Wait hands the result over and forgets it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "hvd/runtime/runtime.h"

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

 private:
  std::mutex mu_;
  std::condition_variable completed_;
  Handle next_ = 1;
  std::unordered_map<Handle, std::optional<OpResult>> results_;
};

}  // namespace hvd::runtime
