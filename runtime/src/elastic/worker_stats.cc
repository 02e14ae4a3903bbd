#include "hvd/runtime/worker_stats.h"

namespace hvd::runtime {

namespace {

double Millis(WorkerStats::TimePoint from, WorkerStats::TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

WorkerStats::WorkerStats(Clock now) : now_(std::move(now)) {}

void WorkerStats::GenerationJoined(int64_t generation, bool syncs) {
  std::lock_guard<std::mutex> lock(mu_);
  awaiting_first_op_.store(false, std::memory_order_relaxed);
  phase_ = Phase::kConnecting;
  phase_started_ = now_();
  syncs_ = syncs;
  current_ = rendezvous::RecoveryMarks{};
  current_.generation = generation;
}

void WorkerStats::RuntimeStarted(int rank, int size) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = current_.generation;
  rank_ = rank;
  size_ = size;
  if (phase_ != Phase::kConnecting) return;
  const TimePoint now = now_();
  current_.connect_ms = Millis(phase_started_, now);
  phase_started_ = now;
  phase_ = syncs_ ? Phase::kSyncing : Phase::kAwaitingFirstOp;
  if (phase_ == Phase::kAwaitingFirstOp) {
    awaiting_first_op_.store(true, std::memory_order_relaxed);
  }
}

void WorkerStats::Synced() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kSyncing) return;
  const TimePoint now = now_();
  current_.sync_ms = Millis(phase_started_, now);
  phase_started_ = now;
  phase_ = Phase::kAwaitingFirstOp;
  awaiting_first_op_.store(true, std::memory_order_relaxed);
}

void WorkerStats::FirstOp() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kAwaitingFirstOp) return;
  current_.first_step_ms = Millis(phase_started_, now_());
  complete_ = current_;
  phase_ = Phase::kIdle;
  awaiting_first_op_.store(false, std::memory_order_relaxed);
  if (listener_) listener_();
}

rendezvous::WorkerReport WorkerStats::Report() const {
  rendezvous::WorkerReport report;
  for (size_t i = 0; i < ops_.size(); ++i) {
    report.ops[OpTypeName(static_cast<OpType>(i))] =
        rendezvous::OpCounter{ops_[i].count.load(std::memory_order_relaxed),
                              ops_[i].bytes.load(std::memory_order_relaxed)};
  }
  report.stalls = stalls_.load(std::memory_order_relaxed);
  report.steps = steps_.load(std::memory_order_relaxed);
  report.commits = commits_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  report.generation = generation_;
  report.rank = rank_;
  report.size = size_;
  report.recovery = complete_;
  return report;
}

void WorkerStats::SetRecoveryListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

}  // namespace hvd::runtime
