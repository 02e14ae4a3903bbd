#include "tensor_queue.h"

namespace hvd::runtime {

using common::Status;

Status TensorQueue::Add(TensorEntry entry) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_closed_) return closed_;
    const std::string& name = entry.request.name;
    if (entries_.count(name) != 0) {
      return Status::InvalidArgument(
          "a collective named '" + name +
          "' is already in flight on this rank; names must be unique until "
          "their handle is synchronized");
    }
    new_requests_.push_back(entry.request);
    entries_.emplace(name, std::move(entry));
  }
  work_.notify_one();
  return Status::Ok();
}

void TensorQueue::WaitForWork(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  work_.wait_for(lock, timeout,
                 [&] { return !new_requests_.empty() || shutdown_requested_; });
}

RequestList TensorQueue::PopRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  RequestList list;
  list.shutdown = shutdown_requested_;
  list.requests.swap(new_requests_);
  return list;
}

void TensorQueue::RequestShutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_requested_ = true;
  }
  work_.notify_one();
}

std::optional<TensorEntry> TensorQueue::Take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  TensorEntry entry = std::move(it->second);
  entries_.erase(it);
  return entry;
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
