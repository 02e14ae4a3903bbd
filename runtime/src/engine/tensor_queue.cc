#include "engine/tensor_queue.h"

#include <algorithm>

namespace hvd::runtime {

using common::Status;

void WorkSignal::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = true;
    ++notified_;
  }
  cv_.notify_one();
}

void WorkSignal::WaitFor(std::chrono::microseconds timeout,
                         std::chrono::microseconds quiet) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return pending_ || shutdown_; });
  while (pending_ && !shutdown_ && quiet.count() > 0) {
    const uint64_t seen = notified_;
    const auto until =
        std::min(deadline, std::chrono::steady_clock::now() + quiet);
    if (!cv_.wait_until(lock, until,
                        [&] { return notified_ != seen || shutdown_; })) {
      break;  // quiet for `quiet`, or out of time
    }
  }
  pending_ = false;
}

void WorkSignal::RequestShutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_one();
}

bool WorkSignal::shutdown_requested() {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_;
}

Status TensorQueue::Add(std::vector<TensorEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_closed_) return closed_;
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string& name = entries[i].request.name;
      bool twice = false;
      for (size_t k = 0; k < i; ++k) twice |= entries[k].request.name == name;
      if (twice || entries_.count(name) != 0) {
        return Status::InvalidArgument(
            "a collective named '" + name +
            "' is already in flight on this rank; a name can be used again "
            "once its collective has completed");
      }
    }
    for (TensorEntry& entry : entries) {
      new_requests_.push_back(entry.request);
      std::string name = entry.request.name;
      entries_.emplace(std::move(name), std::move(entry));
    }
  }
  signal_->Notify();
  return Status::Ok();
}

std::vector<Request> TensorQueue::PopRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Request> requests;
  requests.swap(new_requests_);
  return requests;
}

std::optional<TensorEntry> TensorQueue::Take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  TensorEntry entry = std::move(it->second);
  entries_.erase(it);
  return entry;
}

bool TensorQueue::Has(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(name) != 0;
}

std::vector<TensorEntry> TensorQueue::Close(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!is_closed_) {
    is_closed_ = true;
    closed_ = status;
  }
  std::vector<TensorEntry> pending;
  for (auto& [name, entry] : entries_) pending.push_back(std::move(entry));
  entries_.clear();
  new_requests_.clear();
  return pending;
}

}  // namespace hvd::runtime
