// Errands: the driver's short jobs off its loop (a push, a probe, a host
// check), each bounded by its own deadline so that a hung worker or host
// answers late without holding the loop up.
//
// At most `max_threads` run at once; more wait in order. One thread per
// errand would be a thousand threads for one push to a thousand workers,
// and a hundred thousand discovered hosts would start as many host checks.
//
// An exception an errand throws (JSON of a peer's bytes, an allocation)
// ends that errand, never hvdrun: it becomes a Status (RunCatching), is
// logged, and goes to the errand's `failed`, so an errand that owes the
// loop an event (a probe's answer, a host check's verdict) still posts one.
//
// Run and JoinAll are called by the driver's thread only; the errands run
// on the pool's threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::launcher {

// Errand threads of hvdrun's driver: enough that a push to a thousand
// workers, each answering within milliseconds, is not serialised, and that
// a few hung ones (2 s each at most) do not hold the rest.
inline constexpr size_t kErrandThreads = 64;

// Runs `work`; an exception it throws becomes kInternal naming `what` and
// the exception's text. Ok when `work` returned.
common::Status RunCatching(const std::string& what,
                           const std::function<void()>& work);

class Errands {
 public:
  explicit Errands(size_t max_threads = kErrandThreads);
  ~Errands() { JoinAll(); }
  Errands(const Errands&) = delete;
  Errands& operator=(const Errands&) = delete;

  // Queues `errand`; a pool thread runs it, started here while there are
  // fewer than max_threads. `failed`, when given, gets the Status of an
  // exception the errand threw (already logged), on the same thread.
  void Run(std::function<void()> errand);
  void Run(std::function<void(const common::Status&)> failed,
           std::function<void()> errand);

  // Runs every queued errand, waits for them, and ends the threads.
  void JoinAll();

  // Threads started so far (for tests: never above max_threads).
  size_t threads() const { return threads_.size(); }

 private:
  struct Errand {
    std::function<void()> work;
    std::function<void(const common::Status&)> failed;
  };
  void Work();
  void RunHere();  // the queue on the caller's thread: no thread started
  static void Finish(Errand& errand);

  const size_t max_threads_;
  std::vector<std::thread> threads_;  // the driver's thread's alone
  std::mutex mu_;
  std::condition_variable queued_;
  std::deque<Errand> queue_;  // guarded by mu_
  size_t idle_ = 0;           // guarded by mu_: threads waiting for work
  bool joining_ = false;      // guarded by mu_
};

}  // namespace hvd::launcher
