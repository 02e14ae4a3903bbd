#include "driver/errands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

namespace hvd::launcher {

common::Status RunCatching(const std::string& what,
                           const std::function<void()>& work) {
  try {
    work();
    return common::Status::Ok();
  } catch (const std::exception& e) {
    return common::Status::Internal(what + " failed: " + e.what());
  } catch (...) {
    return common::Status::Internal(what + " failed: an unknown exception");
  }
}

Errands::Errands(size_t max_threads)
    : max_threads_(std::max<size_t>(max_threads, 1)) {}

void Errands::Run(std::function<void()> errand) {
  Run(nullptr, std::move(errand));
}

void Errands::Run(std::function<void(const common::Status&)> failed,
                  std::function<void()> errand) {
  bool start_one = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(errand), std::move(failed)});
    // A new thread only when every one is busy: a quiet job keeps few.
    start_one = idle_ < queue_.size() && threads_.size() < max_threads_;
    if (start_one) ++idle_;  // counted before it starts, taken below
  }
  if (start_one) {
    try {
      threads_.emplace_back([this] { Work(); });
    } catch (const std::system_error& e) {
      // Out of threads: the ones there are take it; with none, it runs
      // here rather than never.
      spdlog::error("hvdrun: cannot start an errand thread: {}", e.what());
      std::lock_guard<std::mutex> lock(mu_);
      --idle_;
    }
  }
  if (threads_.empty()) return RunHere();
  queued_.notify_one();
}

void Errands::RunHere() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queue_.empty()) {
    Errand errand = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Finish(errand);
    lock.lock();
  }
}

void Errands::Finish(Errand& errand) {
  common::Status done = RunCatching("an errand of hvdrun's", errand.work);
  if (done.ok()) return;
  spdlog::error("hvdrun: {}", done.message());
  if (!errand.failed) return;
  common::Status told =
      RunCatching("telling an errand's failure", [&] { errand.failed(done); });
  if (!told.ok()) spdlog::error("hvdrun: {}", told.message());
}

void Errands::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    queued_.wait(lock, [this] { return !queue_.empty() || joining_; });
    if (queue_.empty()) return;  // joining, and nothing left
    Errand errand = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    lock.unlock();
    Finish(errand);
    lock.lock();
    ++idle_;
  }
}

void Errands::JoinAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    joining_ = true;
  }
  queued_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  joining_ = false;
  idle_ = 0;
}

}  // namespace hvd::launcher
