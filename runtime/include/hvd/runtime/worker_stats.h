// WorkerStats: what one worker process has done so far, for its reports to
// the driver (Reporter; docs/design.md, "Worker reports"): collectives and
// their payload bytes by op type, stall warnings, optimizer steps, elastic
// commits, and how long each recovery into a generation took by phase.
//
// Owned by the Python binding, one per process from its first hvd.init()
// (a fork makes its own), and shared with every Runtime it starts and with
// the Reporter: the counts go on across elastic resets and re-inits.
//
// Thread safety: every method may be called from any thread. The counters
// are relaxed atomics: OpCompleted, on the background thread's path after
// every collective, costs two atomic adds and one atomic load. The
// recovery marks take mu_, which OpCompleted takes only once per
// generation (the first collective after the marks before it).
//
// Recovery phases of one generation, each mark on the caller's thread and
// the steady clock (so no clock sync between hosts is needed):
//   GenerationJoined (the check-in was answered; in a static job, init
//   began) -> RuntimeStarted: connect_ms;
//   RuntimeStarted -> Synced (the end of state.sync(); only when the
//   generation syncs, else sync_ms is 0): sync_ms;
//   then to the first collective that completes: first_step_ms.
// Marks out of this order are ignored (a Synced without a sync, twice).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "hvd/rendezvous/worker_report.h"
#include "hvd/runtime/owner_process.h"
#include "hvd/runtime/types.h"

namespace hvd::runtime {

class WorkerStats {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Clock = std::function<TimePoint()>;

  // `now` is read only for the recovery marks (tests pass a fake clock).
  explicit WorkerStats(Clock now = [] {
    return std::chrono::steady_clock::now();
  });
  WorkerStats(const WorkerStats&) = delete;
  WorkerStats& operator=(const WorkerStats&) = delete;

  // A collective this rank submitted completed successfully; `bytes` is its
  // payload as submitted on this rank (0 for barrier, join and process set
  // changes).
  void OpCompleted(OpType type, int64_t bytes) {
    const auto index = static_cast<size_t>(type);
    if (index < ops_.size()) {
      ops_[index].count.fetch_add(1, std::memory_order_relaxed);
      ops_[index].bytes.fetch_add(bytes, std::memory_order_relaxed);
    }
    if (awaiting_first_op_.load(std::memory_order_relaxed)) FirstOp();
  }
  // The stall inspector logged a warning.
  void StallWarned() { stalls_.fetch_add(1, std::memory_order_relaxed); }
  // DistributedOptimizer.step() and elastic state.commit() returned.
  void Stepped() { steps_.fetch_add(1, std::memory_order_relaxed); }
  void Committed() { commits_.fetch_add(1, std::memory_order_relaxed); }

  // Recovery marks (see above). `generation`: the elastic generation
  // joined, 0 in a static job; `syncs`: the generation starts with a state
  // sync that the caller will mark.
  void GenerationJoined(int64_t generation, bool syncs);
  // The generation's runtime runs, as `rank` of `size`.
  void RuntimeStarted(int rank, int size);
  void Synced();

  // The report's content: every op type (zeros included), the counters,
  // the generation, rank and size last started, and the newest complete
  // recovery marks. Slot, worker and pid are the caller's.
  rendezvous::WorkerReport Report() const;

  // Called once a generation's recovery marks are complete, on the thread
  // that completed them (the background thread, usually) with mu_ held: it
  // must be quick and must not call this object. Null: none.
  void SetRecoveryListener(std::function<void()> listener);

  // False in a process forked from the one that made this object.
  bool IsCurrentProcess() const { return owner_.IsCurrent(); }

 private:
  enum class Phase { kIdle, kConnecting, kSyncing, kAwaitingFirstOp };
  struct Counter {
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> bytes{0};
  };

  void FirstOp();

  const OwnerProcess owner_;
  const Clock now_;
  std::array<Counter, kOpTypeCount> ops_;
  std::atomic<int64_t> stalls_{0};
  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> commits_{0};
  // Set while the phase is kAwaitingFirstOp, so that the hot path needs
  // no lock.
  std::atomic<bool> awaiting_first_op_{false};

  mutable std::mutex mu_;
  Phase phase_ = Phase::kIdle;  // guarded by mu_, as is everything below
  bool syncs_ = false;
  TimePoint phase_started_;
  rendezvous::RecoveryMarks current_;
  std::optional<rendezvous::RecoveryMarks> complete_;
  int64_t generation_ = 0;
  int rank_ = 0;
  int size_ = 0;
  std::function<void()> listener_;
};

}  // namespace hvd::runtime
