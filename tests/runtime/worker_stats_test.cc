// WorkerStats: the counters and recovery marks of a worker's reports, with
// a fake clock; then a real one-rank Runtime counting its collectives and
// the stall inspector counting its warnings.
#include "hvd/runtime/worker_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "hvd/runtime/runtime.h"
#include "negotiation/stall_inspector.h"

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;

class FakeClock {
 public:
  WorkerStats::Clock clock() {
    return [this] { return now_; };
  }
  void Advance(std::chrono::microseconds d) { now_ += d; }

 private:
  WorkerStats::TimePoint now_ = WorkerStats::TimePoint{} + 1000s;
};

TEST(WorkerStatsTest, ReportListsEveryOpTypeWithZeros) {
  WorkerStats stats;
  rendezvous::WorkerReport report = stats.Report();
  ASSERT_EQ(report.ops.size(), static_cast<size_t>(kOpTypeCount));
  for (const char* op :
       {"allreduce", "allgather", "broadcast", "alltoall", "reducescatter",
        "barrier", "join", "add_process_set", "remove_process_set"}) {
    ASSERT_EQ(report.ops.count(op), 1u) << op;
    EXPECT_EQ(report.ops[op], (rendezvous::OpCounter{0, 0})) << op;
  }
  EXPECT_EQ(report.steps, 0);
  EXPECT_EQ(report.commits, 0);
  EXPECT_EQ(report.stalls, 0);
  EXPECT_FALSE(report.recovery);
}

TEST(WorkerStatsTest, CountsOpsBytesStepsCommitsAndStalls) {
  WorkerStats stats;
  stats.OpCompleted(OpType::kAllreduce, 400);
  stats.OpCompleted(OpType::kAllreduce, 100);
  stats.OpCompleted(OpType::kBroadcast, 8);
  stats.OpCompleted(OpType::kBarrier, 0);
  stats.Stepped();
  stats.Stepped();
  stats.Committed();
  stats.StallWarned();
  rendezvous::WorkerReport report = stats.Report();
  EXPECT_EQ(report.ops["allreduce"], (rendezvous::OpCounter{2, 500}));
  EXPECT_EQ(report.ops["broadcast"], (rendezvous::OpCounter{1, 8}));
  EXPECT_EQ(report.ops["barrier"], (rendezvous::OpCounter{1, 0}));
  EXPECT_EQ(report.ops["allgather"], (rendezvous::OpCounter{0, 0}));
  EXPECT_EQ(report.steps, 2);
  EXPECT_EQ(report.commits, 1);
  EXPECT_EQ(report.stalls, 1);
}

TEST(WorkerStatsTest, RecoveryWithASync) {
  FakeClock clock;
  WorkerStats stats(clock.clock());
  int heard = 0;
  stats.SetRecoveryListener([&] { ++heard; });
  stats.GenerationJoined(3, /*syncs=*/true);
  clock.Advance(12500us);
  stats.RuntimeStarted(1, 4);
  // The sync's own broadcasts do not count as the first step.
  stats.OpCompleted(OpType::kBroadcast, 8);
  clock.Advance(30ms);
  EXPECT_FALSE(stats.Report().recovery) << "not complete before the sync";
  stats.Synced();
  clock.Advance(5ms);
  EXPECT_EQ(heard, 0);
  stats.OpCompleted(OpType::kAllreduce, 4);
  EXPECT_EQ(heard, 1);
  rendezvous::WorkerReport report = stats.Report();
  EXPECT_EQ(report.generation, 3);
  EXPECT_EQ(report.rank, 1);
  EXPECT_EQ(report.size, 4);
  ASSERT_TRUE(report.recovery);
  EXPECT_EQ(report.recovery->generation, 3);
  EXPECT_DOUBLE_EQ(report.recovery->connect_ms, 12.5);
  EXPECT_DOUBLE_EQ(report.recovery->sync_ms, 30);
  EXPECT_DOUBLE_EQ(report.recovery->first_step_ms, 5);
  // Later ops and a late Synced change nothing.
  clock.Advance(1s);
  stats.OpCompleted(OpType::kAllreduce, 4);
  stats.Synced();
  EXPECT_DOUBLE_EQ(stats.Report().recovery->first_step_ms, 5);
  EXPECT_DOUBLE_EQ(stats.Report().recovery->sync_ms, 30);
  EXPECT_EQ(heard, 1);
}

TEST(WorkerStatsTest, RecoveryWithoutASyncAndANewGeneration) {
  FakeClock clock;
  WorkerStats stats(clock.clock());
  stats.GenerationJoined(0, /*syncs=*/false);  // a static job
  clock.Advance(7ms);
  stats.RuntimeStarted(0, 2);
  stats.Synced();  // no sync was expected: ignored
  clock.Advance(2ms);
  stats.OpCompleted(OpType::kAllgather, 16);
  auto first = stats.Report().recovery;
  ASSERT_TRUE(first);
  EXPECT_EQ(first->generation, 0);
  EXPECT_DOUBLE_EQ(first->connect_ms, 7);
  EXPECT_DOUBLE_EQ(first->sync_ms, 0);
  EXPECT_DOUBLE_EQ(first->first_step_ms, 2);
  // The next generation's marks replace these only once complete.
  stats.GenerationJoined(5, /*syncs=*/false);
  clock.Advance(1ms);
  stats.RuntimeStarted(1, 3);
  rendezvous::WorkerReport between = stats.Report();
  EXPECT_EQ(between.generation, 5);
  EXPECT_EQ(between.recovery->generation, 0);
  clock.Advance(3ms);
  stats.OpCompleted(OpType::kAllreduce, 4);
  auto second = stats.Report().recovery;
  EXPECT_EQ(second->generation, 5);
  EXPECT_DOUBLE_EQ(second->connect_ms, 1);
  EXPECT_DOUBLE_EQ(second->first_step_ms, 3);
}

TEST(WorkerStatsTest, AFailedStartLeavesNoMarks) {
  FakeClock clock;
  WorkerStats stats(clock.clock());
  stats.GenerationJoined(2, false);
  // Runtime::Start failed: no RuntimeStarted; a collective of an older
  // runtime is not this generation's first step.
  stats.OpCompleted(OpType::kAllreduce, 4);
  EXPECT_FALSE(stats.Report().recovery);
}

// A real one-rank runtime counts each collective it completes, with this
// rank's payload bytes as submitted, before the caller's wait returns, and
// the counts go on across runtimes.
TEST(WorkerStatsTest, ARuntimeCountsWhatItCompletes) {
  auto stats = std::make_shared<WorkerStats>();
  RuntimeConfig config;  // one rank, no rendezvous
  config.stall_check = false;
  stats->GenerationJoined(0, false);
  for (int start = 0; start < 2; ++start) {
    auto started = Runtime::Start(config, start, {}, stats);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    std::unique_ptr<Runtime> runtime = std::move(*started);
    if (start == 0) stats->RuntimeStarted(0, 1);
    std::vector<float> data(6, 1.0f);
    TensorSpec spec;
    spec.shape = {2, 3};
    for (int i = 0; i < 3; ++i) {
      auto handle = runtime->Allreduce(spec, data.data(), data.data(), {});
      ASSERT_TRUE(handle.ok()) << handle.status().ToString();
      ASSERT_TRUE(runtime->Wait(*handle).ok());
    }
    spec.dtype = DataType::kInt64;
    spec.shape = {5};
    std::vector<int64_t> ints(5, 1);
    auto gathered = runtime->Allgather(spec, ints.data());
    ASSERT_TRUE(gathered.ok());
    ASSERT_TRUE(runtime->Wait(*gathered).ok());
    auto broadcast = runtime->Broadcast(spec, ints.data(), 0);
    ASSERT_TRUE(broadcast.ok());
    ASSERT_TRUE(runtime->Wait(*broadcast).ok());
    auto barrier = runtime->Barrier();
    ASSERT_TRUE(barrier.ok());
    ASSERT_TRUE(runtime->Wait(*barrier).ok());
    // A refused collective is not counted.
    spec.shape = {-1};
    EXPECT_FALSE(runtime->Allreduce(spec, ints.data(), ints.data(), {}).ok());
    rendezvous::WorkerReport report = stats->Report();
    const int64_t runs = start + 1;
    EXPECT_EQ(report.ops["allreduce"],
              (rendezvous::OpCounter{3 * runs, 3 * runs * 6 * 4}));
    EXPECT_EQ(report.ops["allgather"],
              (rendezvous::OpCounter{runs, runs * 5 * 8}));
    EXPECT_EQ(report.ops["broadcast"],
              (rendezvous::OpCounter{runs, runs * 5 * 8}));
    EXPECT_EQ(report.ops["barrier"], (rendezvous::OpCounter{runs, 0}));
    ASSERT_TRUE(report.recovery) << "the first allreduce completed the marks";
    runtime->Shutdown();
  }
}

TEST(WorkerStatsTest, TheStallInspectorCountsItsWarnings) {
  WorkerStats stats;
  StallOptions options;
  options.warn_after = 10s;
  options.stats = &stats;
  StallInspector inspector(options);
  const SteadyTime t0{};
  PendingTensor p{"grad", OpType::kAllreduce, t0, {1}, {0}};
  EXPECT_FALSE(inspector.Check({p}, t0 + 5s));
  EXPECT_EQ(stats.Report().stalls, 0);
  EXPECT_FALSE(inspector.Check({p}, t0 + 11s));
  EXPECT_FALSE(inspector.Check({p}, t0 + 12s));  // not due again yet
  EXPECT_EQ(stats.Report().stalls, 1);
  EXPECT_FALSE(inspector.Check({p}, t0 + 21s));
  EXPECT_EQ(stats.Report().stalls, 2);
}

}  // namespace
}  // namespace hvd::runtime
