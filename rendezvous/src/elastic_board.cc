#include "hvd/rendezvous/elastic_board.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;

Status ElasticBoard::Publish(GenerationPlan plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (plan.generation <= 0) {
      return Status::InvalidArgument("generations are numbered from 1");
    }
    if (newest_ && plan.generation <= newest_->generation) {
      return Status::InvalidArgument(
          "generation " + std::to_string(plan.generation) +
          " is not newer than " + std::to_string(newest_->generation));
    }
    newest_ = std::move(plan);
    checked_in_.clear();
    reset_requests_.clear();
    // Addresses of slots that stay are still good; a slot's process and
    // its notification server survive a reset.
    for (auto it = notify_.begin(); it != notify_.end();) {
      it = newest_->slots.count(it->first) ? std::next(it) : notify_.erase(it);
    }
  }
  changed_.notify_all();
  return Status::Ok();
}

Status ElasticBoard::Resume(GenerationPlan plan,
                            std::map<std::string, std::string> notify) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (newest_ || plan.generation <= 0) {
      return Status::InvalidArgument(
          "only an empty board resumes a generation numbered from 1");
    }
    checked_in_.clear();
    for (const auto& [slot, assignment] : plan.slots) {
      checked_in_.insert(slot);
    }
    notify_ = std::move(notify);
    newest_ = std::move(plan);
  }
  changed_.notify_all();
  return Status::Ok();
}

Result<WorkerAssignment> ElasticBoard::CheckIn(
    const std::string& slot, int64_t after, const std::string& notify_address,
    std::chrono::milliseconds wait, int64_t worker) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock<std::mutex> lock(mu_);
  int64_t joined = 0;  // the generation this call checked into
  while (true) {
    if (closed_) return Status::Aborted("the driver is shutting down");
    if (newest_ && newest_->generation > after) {
      auto it = newest_->slots.find(slot);
      if (it == newest_->slots.end()) {
        return Status::NotFound("slot " + slot + " is not part of generation " +
                                std::to_string(newest_->generation) +
                                ": removed from the job");
      }
      auto owner = newest_->workers.find(slot);
      if (owner != newest_->workers.end() && owner->second != worker) {
        return Status::NotFound(
            "slot " + slot + " belongs to worker " +
            std::to_string(owner->second) + " in generation " +
            std::to_string(newest_->generation) + ", not to this process " +
            "(worker " + std::to_string(worker) + ", last in generation " +
            std::to_string(after) +
            "): hvdrun replaced it (its host was lost, e.g. partitioned); "
            "it is not part of the job any more");
      }
      if (joined != newest_->generation) {
        joined = newest_->generation;
        checked_in_.insert(slot);
        if (!notify_address.empty()) notify_[slot] = notify_address;
        changed_.notify_all();
        if (listener_) listener_();
      }
      if (checked_in_.size() == newest_->slots.size()) {
        WorkerAssignment answer = it->second;
        answer.reason = newest_->reason;
        answer.hosts = newest_->hosts;
        return answer;
      }
    } else if (newest_ && newest_->generation == after) {
      if (reset_requests_.insert(slot).second && listener_) {
        listener_();
      }
    }
    ++waiting_;
    const std::cv_status woke = changed_.wait_until(lock, deadline);
    --waiting_;
    if (woke == std::cv_status::timeout) {
      std::string state =
          newest_ && newest_->generation > after
              ? std::to_string(newest_->slots.size() - checked_in_.size()) +
                    " of " + std::to_string(newest_->slots.size()) +
                    " slots of generation " +
                    std::to_string(newest_->generation) + " have not checked in"
              : "no generation after " + std::to_string(after) + " yet";
      return Status::Timeout("checking in slot " + slot + ": " + state);
    }
  }
}

int64_t ElasticBoard::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return newest_ ? newest_->generation : 0;
}

bool ElasticBoard::IsMember(int64_t generation, const std::string& slot,
                            int64_t worker) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!newest_) return true;
  if (generation != newest_->generation || !newest_->slots.count(slot)) {
    return false;
  }
  auto owner = newest_->workers.find(slot);
  return owner == newest_->workers.end() || owner->second == worker;
}

std::vector<std::string> ElasticBoard::Missing() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> missing;
  if (!newest_) return missing;
  for (const auto& [slot, assignment] : newest_->slots) {
    if (!checked_in_.count(slot)) missing.push_back(slot);
  }
  return missing;
}

int ElasticBoard::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

std::vector<std::string> ElasticBoard::ResetRequests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {reset_requests_.begin(), reset_requests_.end()};
}

std::map<std::string, std::string> ElasticBoard::NotifyAddresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notify_;
}

void ElasticBoard::SetListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

void ElasticBoard::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::rendezvous
