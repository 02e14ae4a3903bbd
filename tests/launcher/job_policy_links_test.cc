// JobPolicy's rule for a lost link (job_policy_links.cc): a joined
// worker whose ssh link ended as a lost connection does is reattached
// while --adopt-grace-seconds lasts, and fails when that ends or when its
// peers ask for a reset without it.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "job_policy_harness.h"
#include "policy/job_policy.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

PolicyConfig Adoptable(std::chrono::milliseconds window = 60s) {
  PolicyConfig config = Elastic(4, 2);
  config.reattach_window = window;
  return config;
}

// A job of four joined workers a minute after their start.
Harness Settled(std::chrono::milliseconds window = 60s) {
  Harness h = Trained(Adoptable(window));
  h.Advance(60s);
  return h;
}

Actions LoseLink(Harness& h, const std::string& slot) {
  return h.On(WorkerLinkLost{h.worker(slot), Exit(255)});
}

TEST(JobPolicyLinks, ALostLinkIsReattachedAndTheWorkerStays) {
  Harness h = Settled();
  const WorkerId b0 = h.worker("b:0");
  Actions lost = LoseLink(h, "b:0");
  auto reattach = All<ReattachWorker>(lost);
  ASSERT_EQ(reattach.size(), 1u) << Lines(lost);
  EXPECT_EQ(reattach[0].worker, b0);
  EXPECT_EQ(reattach[0].slot.host, "b");
  EXPECT_EQ(reattach[0].slot.layout.rank, 2);
  EXPECT_EQ(reattach[0].generation, 1);
  EXPECT_EQ(reattach[0].connect_within, 60s);
  EXPECT_TRUE(All<WorkerFailed>(lost).empty());
  EXPECT_TRUE(All<PublishGeneration>(lost).empty());
  EXPECT_NE(Lines(lost).find("slot b:0 (rank 2) lost its link to hvdrun "
                             "(exited with code 255); reattaching to its "
                             "worker for up to 60 s"),
            std::string::npos)
      << Lines(lost);
  EXPECT_TRUE(h.policy().Alive(b0));
  // The worker goes on in the job: its peers' next generation keeps it.
  h.Advance(30s);
  EXPECT_TRUE(All<WorkerFailed>(h.Tick()).empty());
  EXPECT_EQ(h.plan().generation, 1);
}

TEST(JobPolicyLinks, TriesComeASecondApartWithTheirConnectBounded) {
  Harness h = Settled(10s);
  LoseLink(h, "b:0");
  h.Advance(200ms);
  // The try could not connect (no route): the next comes a second after
  // it began, and its ssh may take only what is left of the window.
  Actions again = LoseLink(h, "b:0");
  EXPECT_TRUE(All<ReattachWorker>(again).empty());
  EXPECT_EQ(Lines(again), "") << "one window, one line";
  ASSERT_TRUE(h.policy().NextDeadline().has_value());
  EXPECT_EQ(*h.policy().NextDeadline(), h.now() + 800ms);
  auto tried = All<ReattachWorker>(h.ToDeadline());
  ASSERT_EQ(tried.size(), 1u);
  EXPECT_EQ(tried[0].connect_within, 9s);
}

TEST(JobPolicyLinks, AWindowWithoutALinkEndsInAFailure) {
  Harness h = Settled(5s);
  const WorkerId b0 = h.worker("b:0");
  LoseLink(h, "b:0");
  Actions last;
  int tries = 1;
  for (int i = 0; All<WorkerFailed>(last).empty(); ++i) {
    ASSERT_LT(i, 10) << h.log();
    h.Advance(100ms);
    last = LoseLink(h, "b:0");  // every try fails at once
    if (!All<WorkerFailed>(last).empty()) break;
    last = h.ToDeadline();
    tries += All<ReattachWorker>(last).size();
  }
  // At 0, 1, 2, 3 and 4 s: a try a second while a second is left.
  EXPECT_EQ(tries, 5) << h.log();
  EXPECT_EQ(h.now(), kT0 + 60s + 4100ms);
  auto failed = All<WorkerFailed>(last);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].worker, b0);
  EXPECT_EQ(failed[0].exit_code, 255);
  EXPECT_EQ(failed[0].what,
            "lost its link to hvdrun and could not be reattached within 5 s "
            "(--adopt-grace-seconds)");
  EXPECT_FALSE(h.policy().Alive(b0));
  // As any failure: b blacklisted, its other worker stopped, a generation
  // of a's slots.
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().slots.size(), 2u);
}

TEST(JobPolicyLinks, PeersAskingForAResetWithoutItFailItAtOnce) {
  Harness h = Settled();
  const WorkerId b0 = h.worker("b:0");
  LoseLink(h, "b:0");
  h.Advance(100ms);
  LoseLink(h, "b:0");  // no link now, the next try in 0.9 s
  // Its peers' collectives broke: the worker is gone, not only its link.
  Actions verdict = h.AskReset({"a:0", "a:1", "b:1"});
  auto failed = All<WorkerFailed>(verdict);
  ASSERT_EQ(failed.size(), 1u) << Lines(verdict);
  EXPECT_EQ(failed[0].worker, b0);
  EXPECT_EQ(failed[0].what,
            "lost its link to hvdrun, and its peers asked for a reset without "
            "it");
  EXPECT_TRUE(All<ReattachWorker>(verdict).empty());
  EXPECT_EQ(h.plan().generation, 2);
}

TEST(JobPolicyLinks, ALinkLostWhilePeersWaitForItIsAFailure) {
  Harness h = Settled();
  h.AskReset({"a:0", "a:1", "b:1"});
  Actions lost = LoseLink(h, "b:0");
  EXPECT_TRUE(All<ReattachWorker>(lost).empty());
  auto failed = All<WorkerFailed>(lost);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].what, "exited with code 255");
}

TEST(JobPolicyLinks, ALinkThatLivedAWindowOpensANewOne) {
  Harness h = Settled(10s);
  LoseLink(h, "b:0");
  h.Advance(10s);  // the reattached link was up all along
  Actions lost = LoseLink(h, "b:0");
  auto reattach = All<ReattachWorker>(lost);
  ASSERT_EQ(reattach.size(), 1u) << h.log();
  EXPECT_EQ(reattach[0].connect_within, 10s);
  EXPECT_NE(Lines(lost).find("reattaching"), std::string::npos);
}

TEST(JobPolicyLinks, WithoutAnAdoptGraceALostLinkIsAFailure) {
  Harness h = Settled(0s);
  Actions lost = LoseLink(h, "b:0");
  EXPECT_TRUE(All<ReattachWorker>(lost).empty());
  ASSERT_EQ(All<WorkerFailed>(lost).size(), 1u);
  EXPECT_EQ(h.plan().generation, 2);
}

TEST(JobPolicyLinks, AWorkerThatNeverCheckedInIsNotReattached) {
  Harness h(Adoptable());
  h.Start();
  Actions lost = LoseLink(h, "b:0");
  EXPECT_TRUE(All<ReattachWorker>(lost).empty());
  EXPECT_NE(Lines(lost).find("exited with code 255"), std::string::npos)
      << Lines(lost);
}

TEST(JobPolicyLinks, AStopCountsAWorkerWithoutALinkAsExited) {
  Harness h = Settled();
  LoseLink(h, "b:0");
  h.Advance(100ms);
  LoseLink(h, "b:0");
  Actions stop = h.On(SignalReceived{SIGTERM});
  EXPECT_NE(Lines(stop).find("slot b:0 has no link to hvdrun to be stopped "
                             "through; its guard stops it when its grace "
                             "ends"),
            std::string::npos)
      << Lines(stop);
  // The job ends with the other three, not after the stop's escalation.
  for (const char* slot : {"a:0", "a:1"}) h.ExitSlot(slot, Killed(SIGTERM));
  Actions last = h.ExitSlot("b:1", Killed(SIGTERM));
  ASSERT_EQ(All<Finish>(last).size(), 1u) << h.log();
  EXPECT_EQ(All<Finish>(last)[0].exit_code, 128 + SIGTERM);
}

}  // namespace
}  // namespace hvd::launcher
