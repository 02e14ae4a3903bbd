// StatusSnapshots: hands the driver thread's view of the job to the status
// server's handler threads, built only when someone looks.
//
// A handler asks for a snapshot no older than `max_age`; if the newest is
// older, it flags that one is wanted, wakes the driver (`wake`) and waits
// up to `wait` for it, then takes the newest there is. The driver, after
// each round of events, builds one when wanted() and publishes it. So a job
// nobody watches builds none, and a poller costs at most one build per
// `max_age`.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

namespace hvd::launcher {

class StatusSnapshots {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StatusSnapshots(std::function<void()> wake)
      : wake_(std::move(wake)) {}

  // Handler threads. Null before the driver published any.
  std::shared_ptr<const nlohmann::json> Get(std::chrono::milliseconds max_age,
                                            std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = Clock::now() + wait;
    if (newest_ && Clock::now() - built_ <= max_age) return newest_;
    if (!wanted_) {
      wanted_ = true;
      wake_();  // only writes an eventfd: safe under the lock
    }
    const uint64_t seen = version_;
    published_.wait_until(lock, deadline, [&] { return version_ != seen; });
    return newest_;
  }

  // Driver thread.
  bool wanted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return wanted_;
  }
  void Publish(nlohmann::json snapshot) {
    auto shared = std::make_shared<const nlohmann::json>(std::move(snapshot));
    {
      std::lock_guard<std::mutex> lock(mu_);
      newest_ = std::move(shared);
      built_ = Clock::now();
      wanted_ = false;
      ++version_;
    }
    published_.notify_all();
  }

 private:
  const std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable published_;
  std::shared_ptr<const nlohmann::json> newest_;
  Clock::time_point built_;
  uint64_t version_ = 0;
  bool wanted_ = false;
};

}  // namespace hvd::launcher
