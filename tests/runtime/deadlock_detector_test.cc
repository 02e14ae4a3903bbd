#include "negotiation/deadlock_detector.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const SteadyTime t0{};

PendingTensor Pending(const std::string& name, OpType type,
                      std::vector<int> submitted, std::vector<int> missing) {
  PendingTensor p;
  p.name = name;
  p.type = type;
  p.submitted = std::move(submitted);
  p.missing = std::move(missing);
  return p;
}

// Rank 0 waits in allreduce 'a', rank 1 in an unnamed barrier.
std::vector<PendingTensor> Diverged() {
  return {Pending("a", OpType::kAllreduce, {0}, {1}),
          Pending("barrier.noname.3", OpType::kBarrier, {1}, {0})};
}

TEST(DeadlockDetectorTest, EveryRankWaitingPastTheBoundNamesEachRanksOp) {
  DeadlockDetector detector({0, 1}, seconds(5));
  EXPECT_FALSE(detector.Observe(t0, {true, true}, false, Diverged(), {}));
  EXPECT_FALSE(detector.Observe(t0 + milliseconds(4999), {true, true}, false,
                                Diverged(), {}));
  auto message =
      detector.Observe(t0 + seconds(5), {true, true}, false, Diverged(), {});
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("deadlock"), std::string::npos) << *message;
  EXPECT_NE(message->find("waited 5 s"), std::string::npos) << *message;
  EXPECT_NE(message->find("rank 0 waits in allreduce 'a'"), std::string::npos)
      << *message;
  EXPECT_NE(message->find("rank 1 waits in barrier (unnamed, the set's 3rd "
                          "unnamed collective). "),
            std::string::npos)
      << *message;
  EXPECT_NE(message->find("diverged"), std::string::npos) << *message;
  EXPECT_NE(message->find("HOROVOD_GLOO_TIMEOUT_SECONDS"), std::string::npos)
      << *message;
  // Counted afresh: the next verdict needs another full bound.
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(6), {true, true}, false, Diverged(), {}));
  EXPECT_TRUE(
      detector.Observe(t0 + seconds(11), {true, true}, false, Diverged(), {}));
}

TEST(DeadlockDetectorTest, OneRankNotWaitingIsNoDeadlock) {
  DeadlockDetector detector({0, 1, 2}, seconds(5));
  for (int s = 0; s <= 60; s += 5) {
    EXPECT_FALSE(detector.Observe(t0 + seconds(s), {true, false, true}, false,
                                  Diverged(), {}))
        << s;
  }
}

TEST(DeadlockDetectorTest, AResponseOrARankNotWaitingRestartsTheClock) {
  DeadlockDetector detector({0, 1}, seconds(5));
  EXPECT_FALSE(detector.Observe(t0, {true, true}, false, Diverged(), {}));
  // A response at 4 s: the ranks went on, the clock starts again.
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(4), {true, true}, true, Diverged(), {}));
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(5), {true, true}, false, Diverged(), {}));
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(9), {true, true}, false, Diverged(), {}));
  // Rank 1 enqueued something at 9.5 s (it did not wait for one cycle).
  EXPECT_FALSE(detector.Observe(t0 + milliseconds(9500), {true, false}, false,
                                Diverged(), {}));
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(10), {true, true}, false, Diverged(), {}));
  EXPECT_FALSE(
      detector.Observe(t0 + seconds(14), {true, true}, false, Diverged(), {}));
  EXPECT_TRUE(
      detector.Observe(t0 + seconds(15), {true, true}, false, Diverged(), {}));
}

// Every member waits in the same collective: it is about to run, however
// long they waited (a name every member submitted leaves the coordinator's
// table in the cycle it completes; this is the detector's own guard).
TEST(DeadlockDetectorTest, EveryMemberWaitingInTheSameCollectiveIsNoDeadlock) {
  DeadlockDetector detector({0, 1, 2}, seconds(1));
  std::vector<PendingTensor> pending = Diverged();
  pending.push_back(
      Pending("allgather.noname.2", OpType::kAllgather, {0, 1, 2}, {}));
  for (int s = 0; s <= 60; ++s) {
    EXPECT_FALSE(detector.Observe(t0 + seconds(s), {true, true, true}, false,
                                  pending, {}))
        << s;
  }
}

// Two ranks in unnamed collectives of one op whose numbers differ (their
// call orders diverged): the message tells the two apart.
TEST(DeadlockDetectorTest, UnnamedWaitsInOneOpAreToldApartByNumber) {
  const std::string message = DescribeDeadlock(
      {0, 1},
      {Pending("allgather.noname.2", OpType::kAllgather, {0}, {1}),
       Pending("allgather.noname.3", OpType::kAllgather, {1}, {0})},
      {}, seconds(30));
  EXPECT_NE(message.find("rank 0 waits in allgather (unnamed, the set's 2nd "
                         "unnamed collective); rank 1 waits in allgather "
                         "(unnamed, the set's 3rd unnamed collective)"),
            std::string::npos)
      << message;
}

TEST(DeadlockDetectorTest, NothingPendingIsNothingToFail) {
  // Every rank waits on another set's collectives: nothing here to end.
  DeadlockDetector detector({0, 1}, seconds(1));
  EXPECT_FALSE(detector.Observe(t0, {true, true}, false, {}, {}));
  EXPECT_FALSE(detector.Observe(t0 + seconds(2), {true, true}, false, {}, {}));
  // A waiting rank's cache hit reaches the coordinator later: the clock
  // kept running since every rank began to wait.
  EXPECT_TRUE(
      detector.Observe(t0 + seconds(3), {true, true}, false, Diverged(), {}));
}

TEST(DeadlockDetectorTest, JoinedRanksAreNamedAndTheirJoinFails) {
  // Rank 0 joined; ranks 1 and 2 wait on different names.
  DeadlockDetector detector({0, 1, 2}, seconds(1));
  std::vector<PendingTensor> pending = {
      Pending("x", OpType::kAllreduce, {1}, {2}),
      Pending("y", OpType::kBroadcast, {2}, {1})};
  EXPECT_FALSE(detector.Observe(t0, {true, true, true}, false, pending, {0}));
  auto message = detector.Observe(t0 + seconds(1), {true, true, true}, false,
                                  pending, {0});
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("rank 0 has joined (hvd.join)"), std::string::npos)
      << *message;
  EXPECT_NE(message->find("rank 1 waits in allreduce 'x'"), std::string::npos)
      << *message;
  EXPECT_NE(message->find("rank 2 waits in broadcast 'y'"), std::string::npos)
      << *message;
  // Only a join pending (the others wait elsewhere) still fails it.
  DeadlockDetector alone({0, 1}, seconds(1));
  EXPECT_FALSE(alone.Observe(t0, {true, true}, false, {}, {1}));
  EXPECT_TRUE(alone.Observe(t0 + seconds(1), {true, true}, false, {}, {1}));
}

TEST(DeadlockDetectorTest, ManyPendingNamesAreCountedNotAllListed) {
  std::vector<PendingTensor> pending;
  for (int i = 0; i < 5; ++i) {
    pending.push_back(
        Pending("g" + std::to_string(i), OpType::kAllreduce, {0}, {1}));
  }
  const std::string message =
      DescribeDeadlock({0, 1}, pending, {}, seconds(30));
  EXPECT_NE(message.find("rank 0 waits in allreduce 'g0', allreduce 'g1', "
                         "allreduce 'g2' and 2 more"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("rank 1 has nothing pending here"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace hvd::runtime
