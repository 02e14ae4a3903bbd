// DriverState: what JobPolicy::Save keeps of a job, its JSON both ways,
// and the host table rebuilt from it with wall-clock deadlines. Time is a
// value the test moves, and the wall clock an anchor it sets.
#include "policy/driver_state.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "job_policy_harness.h"
#include "policy/job_policy.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

// kT0 on the steady clock is 2026-11-28 00:00:00 UTC on the wall clock.
const WallClockAnchor kClock{kT0, 1795824000000};

TEST(DriverStateTest, AFailureIsSavedWithItsBlacklistAsWallClockTime) {
  PolicyConfig config = Elastic(4, 2);
  config.cooldown = CooldownRange{10s, 40s};
  Harness h = Trained(config);
  h.Advance(5000ms);
  h.ExitSlot("b:0", Exit(17));
  const DriverState state = h.policy().Save(kClock);

  EXPECT_EQ(state.plan.generation, 2);
  EXPECT_EQ(state.complete_generation, 1);  // nobody joined 2 yet
  EXPECT_EQ(state.resets, 0);
  // b:0 is gone; b:1 was told to stop with its host and may still run.
  ASSERT_EQ(state.workers.size(), 3u);
  std::map<std::string, SavedWorker> by_slot;
  for (const SavedWorker& w : state.workers) by_slot[w.slot] = w;
  EXPECT_FALSE(by_slot.at("a:0").stopping);
  EXPECT_EQ(by_slot.at("a:0").id, h.worker("a:0"));
  EXPECT_EQ(by_slot.at("a:0").joined, 1);
  EXPECT_EQ(by_slot.at("a:0").joined_rank, 0);
  EXPECT_TRUE(by_slot.at("b:1").stopping);
  EXPECT_EQ(state.holders.size(), 4u);  // generation 1's, all of them
  ASSERT_EQ(state.hosts.size(), 2u);
  EXPECT_EQ(state.hosts[0].host, "a");
  EXPECT_EQ(state.hosts[0].blacklisting.times, 0);
  EXPECT_EQ(state.hosts[1].host, "b");
  EXPECT_EQ(state.hosts[1].blacklisting.times, 1);
  // Blacklisted 5 s after kT0 for the first cooldown, 10 s.
  ASSERT_TRUE(state.hosts[1].blacklisting.until_ms.has_value());
  EXPECT_EQ(*state.hosts[1].blacklisting.until_ms, kClock.wall_ms + 15000);

  // Everyone joins generation 2: it is complete, and rank 0 holds.
  h.CheckInAll();
  const DriverState joined = h.policy().Save(kClock);
  EXPECT_EQ(joined.complete_generation, 2);
  EXPECT_EQ(joined.resets, 1);
}

TEST(DriverStateTest, AHostBlacklistedForGoodHasNoEnd) {
  Harness h = Trained();
  h.ExitSlot("b:0", Exit(1));
  const DriverState state = h.policy().Save(kClock);
  ASSERT_EQ(state.hosts.size(), 2u);
  EXPECT_EQ(state.hosts[1].blacklisting.times, 1);
  EXPECT_FALSE(state.hosts[1].blacklisting.until_ms.has_value());
}

TEST(DriverStateTest, TheJsonFormGoesBothWays) {
  PolicyConfig config = Elastic(4, 2);
  config.cooldown = CooldownRange{10s, 40s};
  Harness h = Trained(config);
  h.ExitSlot("b:0", Exit(17));
  DriverState state = h.policy().Save(kClock);
  state.workers[0].pid = 4242;
  state.workers[0].notify = "10.0.0.7:40123";
  state.workers[0].adoptable = true;
  state.hosts[0].slots_out[1] = {2, kClock.wall_ms + 99};
  const std::string text = EncodeDriverState(state);
  auto decoded = DecodeDriverState(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(EncodeDriverState(*decoded), text);
  EXPECT_EQ(decoded->plan.slots.at("a:1").layout.rank,
            state.plan.slots.at("a:1").layout.rank);
  EXPECT_EQ(decoded->workers[0].notify, "10.0.0.7:40123");
  EXPECT_TRUE(decoded->workers[0].adoptable);
  EXPECT_EQ(decoded->hosts[0].slots_out.at(1).times, 2);
}

TEST(DriverStateTest, AHostTableRebuiltFromItsSavedFormAgrees) {
  HostTable table(CooldownRange{10s, 40s});
  table.Update({{"a", 2}, {"b", 2}, {"c", 1}});
  table.Blacklist("b", kT0 + 1s);
  table.BlacklistSlot("a", 1, kT0 + 2s);
  table.Update({{"a", 2}, {"b", 2}});  // c is no longer listed
  // Rebuilt on another machine whose steady clock reads otherwise.
  const WallClockAnchor there{kT0 + 500h, kClock.wall_ms + 3000};
  HostTable rebuilt =
      HostTable::Restore(CooldownRange{10s, 40s}, table.Save(kClock), there);
  // 3 s later on the wall clock, the same deadlines hold there.
  EXPECT_EQ(rebuilt.Save(there)[1].blacklisting.until_ms,
            table.Save(kClock)[1].blacklisting.until_ms);
  for (auto wall_offset : {0s, 10s, 11s, 12s, 13s}) {
    const auto here_now = kT0 + 3s + wall_offset;
    const auto there_now = there.steady + wall_offset;
    EXPECT_EQ(rebuilt.IsBlacklisted("b", there_now),
              table.IsBlacklisted("b", here_now))
        << wall_offset.count();
    EXPECT_EQ(rebuilt.SlotsOut("a", there_now), table.SlotsOut("a", here_now))
        << wall_offset.count();
  }
  EXPECT_EQ(rebuilt.TimesBlacklisted("b"), 1);
  ASSERT_EQ(rebuilt.Usable(there.steady).size(), 1u);  // a, without c
  EXPECT_EQ(rebuilt.Usable(there.steady)[0].host, "a");
}

// A policy that resumed a saved job: the state it would save is the same,
// and it goes on as the first would have (a failure after the takeover is
// handled as any).
TEST(DriverStateTest, APolicyResumedFromTheStateGoesOnWhereItWasLeft) {
  PolicyConfig config = Elastic(4, 1);
  config.cooldown = CooldownRange{100s, 400s};
  Harness h = Trained(config);
  h.ExitSlot("b:0", Exit(17));
  h.ExitSlot("b:1", Killed(SIGTERM));
  h.CheckInAll();
  const DriverState saved = h.policy().Save(kClock);
  ASSERT_EQ(saved.plan.generation, 2);

  // Another hvdrun, whose steady clock reads otherwise, 20 s later.
  const WallClockAnchor there{kT0 + 100h, kClock.wall_ms + 20000};
  JobPolicy resumed(config, {{"a", 2}, {"b", 2}});
  Actions first = resumed.Resume(there.steady, saved, there);
  EXPECT_TRUE(All<StartWorker>(first).empty());
  EXPECT_TRUE(All<PublishGeneration>(first).empty());
  EXPECT_TRUE(All<CheckHost>(first).empty());  // b is still out
  EXPECT_EQ(EncodeDriverState(resumed.Save(there)), EncodeDriverState(saved));
  EXPECT_EQ(resumed.generation(), 2);
  EXPECT_EQ(resumed.resets(), 1);

  // a:1 fails after the takeover: a:0 goes on alone, in generation 3 (b's
  // cooldown runs until 100 s after its failure, wall-clock).
  Actions failed = resumed.OnEvent(there.steady + 1s,
                                   WorkerExited{h.worker("a:1"), Exit(3)});
  auto published = All<PublishGeneration>(failed);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].plan.generation, 3);
  EXPECT_EQ(published[0].plan.slots.size(), 1u);
  EXPECT_EQ(published[0].plan.workers.at("a:0"), h.worker("a:0"));
}

TEST(DriverStateTest, AWorkerThatCannotBeAdoptedIsAFailure) {
  Harness h = Trained();
  const DriverState saved = h.policy().Save(kClock);
  JobPolicy resumed(Elastic(4, 2), {{"a", 2}, {"b", 2}});
  resumed.Resume(kT0, saved, kClock);
  Actions lost = resumed.OnEvent(
      kT0, WorkerLaunchFailed{h.worker("b:0"), "it ran beside the last leader",
                              true});
  auto failures = All<WorkerFailed>(lost);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].what,
            "could not be adopted: it ran beside the last leader");
  auto published = All<PublishGeneration>(lost);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].plan.generation, 2);
  EXPECT_NE(published[0].plan.reason.find("slot b:0 could not be adopted; "
                                          "host b blacklisted"),
            std::string::npos)
      << published[0].plan.reason;
}

TEST(DriverStateTest, AnythingElseIsRefusedSayingWhat) {
  Harness h = Trained();
  const std::string good = EncodeDriverState(h.policy().Save(kClock));
  auto refused = [](const std::string& text) {
    auto decoded = DecodeDriverState(text);
    EXPECT_FALSE(decoded.ok()) << text;
    return decoded.ok() ? std::string() : decoded.status().message();
  };
  EXPECT_EQ(refused("not json"),
            "the driver's state in etcd is not a JSON object");
  EXPECT_EQ(refused("[1]"), "the driver's state in etcd is not a JSON object");
  std::string no_holders = good;
  no_holders.replace(no_holders.find("\"holders\""), 9, "\"holderz\"");
  EXPECT_EQ(refused(no_holders),
            "the driver's state in etcd is malformed: no 'holders'");
  std::string float_resets = good;
  float_resets.replace(float_resets.find("\"resets\":0"), 10, "\"resets\":0.5");
  EXPECT_EQ(refused(float_resets),
            "the driver's state in etcd is malformed: 'resets' is not an "
            "integer");
  EXPECT_NE(refused(std::string(kMaxDriverStateBytes + 1, ' '))
                .find("over " + std::to_string(kMaxDriverStateBytes)),
            std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
