#include "engine/handle_table.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

Status Unknown(Handle handle) {
  return Status::InvalidArgument("unknown handle " + std::to_string(handle) +
                                 " (already synchronized, or from before "
                                 "the last hvd.init()?)");
}

}  // namespace

Handle HandleTable::Create() {
  std::lock_guard<std::mutex> lock(mu_);
  Handle handle = next_++;
  results_.emplace(handle, std::nullopt);
  return handle;
}

void HandleTable::Complete(Handle handle, OpResult result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = results_.find(handle);
    if (it == results_.end()) return;
    it->second = std::move(result);
    ++activity_;
  }
  completed_.notify_all();
}

void HandleTable::CompleteAll(const std::vector<Handle>& handles,
                              std::vector<OpResult> results) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < handles.size(); ++i) {
      auto it = results_.find(handles[i]);
      if (it != results_.end()) it->second = std::move(results[i]);
    }
    ++activity_;
  }
  completed_.notify_all();
}

Result<bool> HandleTable::Poll(Handle handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = results_.find(handle);
  if (it == results_.end()) return Unknown(handle);
  return it->second.has_value();
}

Result<OpResult> HandleTable::Wait(Handle handle) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = results_.find(handle);
  if (it == results_.end()) return Unknown(handle);
  // No deadline here: the background thread completes every handle, with an
  // error at the latest when a Gloo operation times out, on shutdown, or
  // when every rank waits in vain (deadlock_detector.h).
  if (!it->second.has_value()) {
    ++waiters_;
    completed_.wait(lock, [&] { return it->second.has_value(); });
    --waiters_;
  }
  OpResult result = std::move(*it->second);
  results_.erase(it);
  return result;
}

void HandleTable::Enqueued() {
  std::lock_guard<std::mutex> lock(mu_);
  ++activity_;
}

bool HandleTable::QuietWait(uint64_t* seen) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool quiet = waiters_ > 0 && activity_ == *seen;
  *seen = activity_;
  return quiet;
}

}  // namespace hvd::runtime
