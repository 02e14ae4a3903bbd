// JobPolicy: the driver's decisions, driven by synthetic events and times.
// No process, no sleep: time is a value the test moves. The slot rules are
// in job_policy_slots_test.cc, the endings and signals in
// job_policy_restarts_test.cc, the host checks in
// job_policy_host_check_test.cc.
#include "policy/job_policy.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "job_policy_harness.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

// ---- static mode ----

TEST(JobPolicyStatic, StartsEveryRankAndSucceedsWhenAllExitZero) {
  Harness h(Static(3), {{"a", 2}, {"b", 2}});
  Actions start = h.Start();
  auto starts = All<StartWorker>(start);
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0].slot.host, "a");
  EXPECT_EQ(starts[2].slot.host, "b");
  EXPECT_TRUE(All<PublishGeneration>(start).empty());
  EXPECT_FALSE(h.policy().NextDeadline().has_value());
  h.ExitSlot("a:0", Exit(0));
  h.ExitSlot("a:1", Exit(0));
  EXPECT_FALSE(h.policy().finished());
  h.ExitSlot("b:0", Exit(0));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 0);
}

TEST(JobPolicyStatic, FirstFailureStopsTheOthersAndNamesTheRank) {
  Harness h(Static(3));
  h.Start();
  Actions failed = h.ExitSlot("a:1", Exit(3));
  auto signals = All<SignalWorker>(failed);
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_EQ(signals[0].signal, SIGTERM);
  EXPECT_NE(Lines(failed).find("rank 1 on host a exited with code 3; stopping "
                               "2 workers"),
            std::string::npos)
      << Lines(failed);
  // Workers that ignore SIGTERM get SIGKILL after the grace period.
  Actions kill = h.ToDeadline();
  ASSERT_EQ(All<SignalWorker>(kill).size(), 2u);
  EXPECT_EQ(All<SignalWorker>(kill)[0].signal, SIGKILL);
  // They are named: a host whose workers ignore a stop may be lost.
  EXPECT_NE(Lines(kill).find("(rank 0 on host a; rank 2 on host b): killing"),
            std::string::npos)
      << Lines(kill);
  h.ExitSlot("a:0", Killed(SIGKILL));
  Actions last = h.ExitSlot("b:0", Killed(SIGKILL));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 3);
  EXPECT_NE(h.log().find("workers on b did not stop when told (host lost or "
                         "cut off?); job failed (exit code 3)"),
            std::string::npos)
      << h.log();
  // The failed rank's host first, then those of the workers that ignored
  // the stop: the driver asks Slurm about them.
  ASSERT_EQ(All<Finish>(last).size(), 1u);
  EXPECT_EQ(All<Finish>(last)[0].suspect_hosts,
            (std::vector<std::string>{"a", "b"}));
}

TEST(JobPolicyStatic, ASecondSignalKillsAtOnce) {
  Harness h(Static(2));
  h.Start();
  Actions first = h.On(SignalReceived{SIGINT});
  ASSERT_EQ(All<SignalWorker>(first).size(), 2u);
  EXPECT_EQ(All<SignalWorker>(first)[0].signal, SIGINT);
  Actions second = h.On(SignalReceived{SIGTERM});
  ASSERT_EQ(All<SignalWorker>(second).size(), 2u);
  EXPECT_EQ(All<SignalWorker>(second)[0].signal, SIGKILL);
  h.ExitSlot("a:0", Killed(SIGKILL));
  h.ExitSlot("a:1", Killed(SIGKILL));
  EXPECT_EQ(h.exit_code(), 128 + SIGINT);
}

TEST(JobPolicyStatic, WorkersThatNeverDieAreLeftAfterTheReapGrace) {
  Harness h(Static(1));
  h.Start();
  h.On(SignalReceived{SIGTERM});
  h.ToDeadline();  // SIGKILL
  Actions give_up = h.ToDeadline();
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(Lines(give_up).find("did not exit after SIGKILL"),
            std::string::npos);
  EXPECT_EQ(h.exit_code(), 128 + SIGTERM);
}

// ---- elastic: start and waiting ----

TEST(JobPolicyElastic, FirstGenerationSyncsAndStartsEverySlot) {
  Harness h(Elastic(4, 2));
  Actions start = h.Start();
  ASSERT_EQ(All<PublishGeneration>(start).size(), 1u);
  EXPECT_EQ(h.plan().generation, 1);
  EXPECT_EQ(h.plan().slots.size(), 4u);
  EXPECT_TRUE(h.plan().slots.at("a:0").sync);
  EXPECT_EQ(All<StartWorker>(start).size(), 4u);
  // Nobody checked in: the start timeout is the next deadline.
  EXPECT_EQ(*h.policy().NextDeadline(), h.now() + 30s);
}

TEST(JobPolicyElastic, TooFewSlotsWaitsUpToTheElasticTimeout) {
  PolicyConfig config = Elastic(4, 4);
  config.elastic_timeout = 3s;
  Harness h(config, {{"a", 2}});
  Actions start = h.Start();
  EXPECT_TRUE(All<StartWorker>(start).empty());
  EXPECT_NE(Lines(start).find("2 usable slots, 4 needed; waiting up to 3 s"),
            std::string::npos);
  EXPECT_EQ(*h.policy().NextDeadline(), h.now() + 3s);
  h.ToDeadline();
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(h.log().find("not enough slots for 3 s (--min-np 4)"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyElastic, DiscoveredHostsEndTheWait) {
  Harness h(Elastic(4, 4), {{"a", 2}});
  h.Start();
  Actions more = h.On(HostsDiscovered{{{"a", 2}, {"b", 2}}});
  EXPECT_EQ(All<StartWorker>(more).size(), 4u);
  EXPECT_EQ(h.plan().generation, 1);
}

// A hundred thousand discovered hosts (issue 33): each discovery run is
// O(N log N) for the policy, not a scan of the host table per host, nor of
// every worker per slot. The bound is far above that, even under a
// sanitizer; the scans took minutes.
TEST(JobPolicyElastic, AHundredThousandDiscoveredHostsAreNoQuadraticWork) {
  PolicyConfig config = Elastic(64, 1);
  config.max_np = 64;
  Harness h(config, {{"a", 2}});
  h.Start();
  h.CheckInAll();
  std::vector<HostSlots> hosts{{"a", 2}};
  for (int i = 0; i < 100'000; ++i) {
    hosts.push_back({"node" + std::to_string(i), 1});
  }
  const auto started = std::chrono::steady_clock::now();
  h.On(HostsDiscovered{hosts});
  EXPECT_EQ(h.plan().slots.size(), 64u);
  h.CheckInAll();
  EXPECT_TRUE(All<PublishGeneration>(h.On(HostsDiscovered{hosts})).empty());
  hosts.pop_back();  // a host no worker is on: no new generation
  EXPECT_TRUE(All<PublishGeneration>(h.On(HostsDiscovered{hosts})).empty());
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 10s)
      << "quadratic? "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
}

TEST(JobPolicyElastic, WorkersExitingZeroWithoutInitFinishTheJob) {
  Harness h(Elastic(2, 2), {{"a", 2}});
  h.Start();
  h.ExitSlot("a:0", Exit(0));
  EXPECT_FALSE(h.policy().finished());
  h.ExitSlot("a:1", Exit(0));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 0);
  EXPECT_NE(h.log().find("job succeeded after 0 resets"), std::string::npos);
}

TEST(JobPolicyElastic, SuccessWhenEveryHolderExitsZeroStopsNewcomers) {
  Harness h = Trained(Elastic(4, 2));
  h.On(HostsDiscovered{{{"a", 2}, {"b", 2}, {"c", 1}}});
  ASSERT_TRUE(h.has_worker("c:0"));
  for (const char* slot : {"a:0", "a:1", "b:0"}) h.ExitSlot(slot, Exit(0));
  Actions last = h.ExitSlot("b:1", Exit(0));
  auto stops = All<SignalWorker>(last);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].worker, h.worker("c:0"));
  h.ExitSlot("c:0", Killed(SIGTERM));
  EXPECT_EQ(h.exit_code(), 0);
}

// A host removed and back before its workers left (they learn it at their
// next check-in, and exit): they are not the slot's workers any more, so
// the new generation starts new ones, and their exit is neither a failure
// nor the job's success. Reusing them left every survivor waiting for a
// process that was leaving (the attack test's quick add, remove, add).
TEST(JobPolicyElastic, AHostBackBeforeItsLeftOutWorkersExitGetsNewOnes) {
  Harness h = Trained();
  const WorkerId old_b0 = h.worker("b:0"), old_b1 = h.worker("b:1");
  h.On(HostsDiscovered{{{"a", 2}}});
  ASSERT_EQ(h.plan().slots.count("b:0"), 0u);
  h.CheckInAll();
  Actions back = h.On(HostsDiscovered{{{"a", 2}, {"b", 2}}});
  ASSERT_EQ(h.plan().slots.count("b:0"), 1u);
  auto starts = All<StartWorker>(back);
  ASSERT_EQ(starts.size(), 2u) << Lines(back);
  EXPECT_NE(h.plan().workers.at("b:0"), old_b0);
  EXPECT_NE(h.plan().workers.at("b:1"), old_b1);
  for (WorkerId old : {old_b0, old_b1}) {
    Actions left = h.On(WorkerExited{old, Exit(0)});
    EXPECT_TRUE(All<PublishGeneration>(left).empty()) << Lines(left);
    EXPECT_TRUE(All<WorkerFailed>(left).empty()) << Lines(left);
  }
  EXPECT_FALSE(h.policy().finished());
}

// ---- elastic: no committed state is thrown away ----

TEST(JobPolicyElastic, LongStepsAreNeverKilledWhileTheWorkersAnswer) {
  Harness h = Trained();
  Actions added = h.On(HostsDiscovered{{{"a", 2}, {"b", 2}, {"c", 1}}});
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_TRUE(h.plan().slots.at("c:0").sync);
  // The newcomer checks in; the trained workers hear of it.
  Actions joined = h.CheckIn({"c:0"});
  auto pushes = All<PushHostsUpdated>(joined);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].slots.size(), 4u);
  EXPECT_EQ(pushes[0].added, std::vector<std::string>{"c"});
  // Their step lasts far longer than every timeout: they are probed, and
  // they answer.
  for (int i = 0; i < 400; ++i) {
    Actions tick = h.ToDeadline();
    for (const SignalWorker& s : All<SignalWorker>(tick)) {
      ADD_FAILURE() << "worker " << s.worker << " signalled " << s.signal;
    }
    for (const ProbeWorker& probe : All<ProbeWorker>(tick)) {
      h.On(WorkerProbed{probe.worker, true, false});
    }
  }
  EXPECT_GT(h.now(), kT0 + 700s);  // past the elastic timeout
  EXPECT_EQ(h.plan().generation, 2);
  h.CheckIn({"a:0", "a:1", "b:0", "b:1"});
  EXPECT_FALSE(h.policy().finished());
  EXPECT_EQ(h.policy().resets(), 1);
}

TEST(JobPolicyElastic, ANewcomerMissingTheStartTimeoutLeavesTheHoldersAlone) {
  Harness h = Trained();
  h.On(HostsDiscovered{{{"a", 2}, {"b", 2}, {"c", 1}}});
  WorkerId newcomer = h.worker("c:0");
  h.Advance(29s);
  h.Tick();
  Actions timeout = h.ToDeadline();
  auto signals = All<SignalWorker>(timeout);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].worker, newcomer);
  EXPECT_EQ(signals[0].signal, SIGKILL);
  EXPECT_TRUE(All<PushAbort>(timeout).empty());
  EXPECT_EQ(h.plan().generation, 3);
  EXPECT_EQ(h.plan().slots.count("c:0"), 0u);
  EXPECT_FALSE(h.plan().slots.at("a:0").sync);  // only holders: no sync
  EXPECT_NE(Lines(timeout).find("did not check in within 30 s"),
            std::string::npos);
  // The holders were never told of generation 2: nothing changes for them.
  EXPECT_TRUE(All<PushHostsUpdated>(timeout).empty());
  h.ExitSlot("c:0", Killed(SIGKILL));
  EXPECT_FALSE(h.policy().finished());
}

TEST(JobPolicyElastic, NoGenerationWithoutAHolderOfTheCommittedState) {
  Harness h(Elastic(2, 1), {{"a", 2}});
  h.Start();
  h.CheckInAll();
  // Discovery replaces every host: the newcomers hold nothing.
  h.On(HostsDiscovered{{{"c", 2}}});
  EXPECT_TRUE(h.policy().finished() ||
              h.log().find("left to carry") != std::string::npos);
  EXPECT_NE(h.log().find("no slot of generation 1 is left to carry the "
                         "committed state"),
            std::string::npos)
      << h.log();
  EXPECT_EQ(h.plan().generation, 1);
}

TEST(JobPolicyElastic, RankZeroIsAlwaysAHolder) {
  PolicyConfig config = Elastic(2, 1);
  config.cooldown = CooldownRange{10s, 10s};
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  h.CheckInAll();
  h.ExitSlot("a:0", Exit(1));  // a is blacklisted for 10 s
  EXPECT_EQ(h.rank("b:0"), 0);
  h.CheckInAll();
  // a returns: older in first-seen order, but b holds the state.
  h.Advance(10s);
  h.Tick();
  ASSERT_EQ(h.plan().slots.size(), 2u);
  EXPECT_EQ(h.rank("b:0"), 0);
  EXPECT_EQ(h.rank("a:0"), 1);
  EXPECT_TRUE(h.plan().slots.at("b:0").sync);
}

// ---- elastic: failures and resets ----

TEST(JobPolicyElastic, AFailureBlacklistsTheHostAbortsAndFormsTheNext) {
  Harness h = Trained();
  Actions failed = h.ExitSlot("b:0", Exit(17));
  auto stops = All<SignalWorker>(failed);
  ASSERT_EQ(stops.size(), 1u);  // b:1 goes with its host
  EXPECT_EQ(stops[0].worker, h.worker("b:1"));
  auto aborts = All<PushAbort>(failed);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(
      std::set<std::string>(aborts[0].slots.begin(), aborts[0].slots.end()),
      (std::set<std::string>{"a:0", "a:1"}));
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().slots.size(), 2u);
  EXPECT_TRUE(h.plan().slots.at("a:0").sync);
  EXPECT_TRUE(All<PushHostsUpdated>(failed).empty());
  EXPECT_NE(Lines(failed).find("slot b:0 failed; host b blacklisted"),
            std::string::npos);
  h.ExitSlot("b:1", Killed(SIGTERM));  // stopped by the driver: no failure
  EXPECT_EQ(h.plan().generation, 2);
}

TEST(JobPolicyElastic, OneFailureIsOneResetWhateverOrderTheNewsArrives) {
  PolicyConfig config = Elastic(4, 2);
  config.reset_limit = 1;
  Harness h = Trained(config);
  // The survivors' reset requests come before the exit.
  Actions early = h.AskReset({"a:0", "a:1", "b:1"});
  EXPECT_TRUE(All<PublishGeneration>(early).empty());
  // Long before any probe could call b:0 hung, its exit arrives.
  h.Advance(1s);
  h.Tick();
  Actions exit = h.ExitSlot("b:0", Exit(1));
  EXPECT_EQ(All<PublishGeneration>(exit).size(), 1u);
  h.ExitSlot("b:1", Killed(SIGTERM));
  h.CheckInAll();
  EXPECT_EQ(h.policy().resets(), 1);
  for (const char* slot : {"a:0", "a:1"}) h.ExitSlot(slot, Exit(0));
  EXPECT_EQ(h.exit_code(), 0);
  EXPECT_NE(h.log().find("succeeded after 1 reset"), std::string::npos);
  EXPECT_EQ(h.log().find("1 resets"), std::string::npos) << h.log();
}

TEST(JobPolicyElastic, AGenerationNoWorkerJoinedIsNotAReset) {
  PolicyConfig config = Elastic(4, 1);
  config.reset_limit = 1;
  Harness h(config, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
  h.Start();
  h.CheckInAll();
  h.ExitSlot("d:0", Exit(1));  // generation 2, not joined yet
  h.ExitSlot("c:0", Exit(1));  // generation 3 replaces it
  EXPECT_EQ(h.plan().generation, 3);
  EXPECT_EQ(h.log().find("reset limit"), std::string::npos) << h.log();
  h.CheckInAll();
  EXPECT_EQ(h.policy().resets(), 1);
  // One more change is one reset too many.
  h.On(HostsDiscovered{{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}}});
  EXPECT_NE(h.log().find("reset limit of 1 exceeded"), std::string::npos)
      << h.log();
}

TEST(JobPolicyElastic, AHungMemberIsFoundByProbesAndReplaced) {
  Harness h = Trained();
  // Its peers' collectives timed out: they ask for a reset, b:0 does not.
  h.AskReset({"a:0", "a:1", "b:1"});
  WorkerId hung = h.worker("b:0");
  Actions verdict;
  for (int i = 0; i < 3; ++i) {
    Actions tick = h.ToDeadline();
    auto probes = All<ProbeWorker>(tick);
    ASSERT_EQ(probes.size(), 1u) << "probe " << i;
    EXPECT_EQ(probes[0].worker, hung);
    verdict = h.On(WorkerProbed{hung, false, false});
  }
  auto kills = All<SignalWorker>(verdict);
  ASSERT_FALSE(kills.empty());
  EXPECT_EQ(kills[0].worker, hung);
  EXPECT_EQ(kills[0].signal, SIGKILL);
  EXPECT_EQ(All<PushAbort>(verdict).size(), 1u);
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().slots.size(), 2u);
  EXPECT_NE(Lines(verdict).find("slot b:0 (rank 2) did not answer 3 liveness "
                                "probes in a row (hung)"),
            std::string::npos)
      << Lines(verdict);
}

TEST(JobPolicyElastic, RefusedProbesAreRepeatedSoonAndFindAGoneProcess) {
  Harness h = Trained();
  h.AskReset({"a:0", "a:1", "b:1"});
  WorkerId gone = h.worker("b:0");
  Actions verdict;
  for (int i = 0; i < 3; ++i) {
    const TimePoint before = h.now();
    Actions tick = h.ToDeadline();
    ASSERT_EQ(All<ProbeWorker>(tick).size(), 1u) << "probe " << i;
    EXPECT_EQ(h.now() - before, std::chrono::milliseconds(250));
    verdict = h.On(WorkerProbed{gone, false, true});
  }
  ASSERT_FALSE(All<SignalWorker>(verdict).empty());
  EXPECT_EQ(All<SignalWorker>(verdict)[0].signal, SIGKILL);
  EXPECT_NE(Lines(verdict).find("refused 3 liveness probes in a row (its "
                                "process is gone)"),
            std::string::npos)
      << Lines(verdict);
}

TEST(JobPolicyElastic, UnderSlurmEveryMemberIsProbedAndASilentOneFails) {
  PolicyConfig config = Elastic(4, 2);
  config.probe_members = true;
  Harness h = Trained(config);
  // Nobody is late, yet every member is probed each liveness interval.
  const TimePoint trained = h.now();
  Actions tick = h.ToDeadline();
  EXPECT_EQ(h.now() - trained, std::chrono::milliseconds(2000));
  auto probes = All<ProbeWorker>(tick);
  ASSERT_EQ(probes.size(), 4u);
  WorkerId silent = h.worker("b:0");
  for (const ProbeWorker& probe : probes) {
    h.On(WorkerProbed{probe.worker, probe.worker != silent, false});
  }
  // The silent one is probed again soon; two more failures fail it.
  Actions verdict;
  for (int i = 0; i < 2; ++i) {
    const TimePoint before = h.now();
    tick = h.ToDeadline();
    ASSERT_EQ(All<ProbeWorker>(tick).size(), 1u) << "probe " << i;
    EXPECT_EQ(h.now() - before, std::chrono::milliseconds(250));
    verdict = h.On(WorkerProbed{silent, false, false});
  }
  ASSERT_FALSE(All<SignalWorker>(verdict).empty());
  EXPECT_EQ(All<SignalWorker>(verdict)[0].worker, silent);
  EXPECT_EQ(All<PushAbort>(verdict).size(), 1u);
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_NE(Lines(verdict).find("host b blacklisted"), std::string::npos)
      << Lines(verdict);
}

TEST(JobPolicyElastic, AnAnsweredProbeResetsTheCount) {
  Harness h = Trained();
  h.AskReset({"a:0", "a:1", "b:1"});
  WorkerId slow = h.worker("b:0");
  for (int i = 0; i < 6; ++i) {
    Actions tick = h.ToDeadline();
    ASSERT_EQ(All<ProbeWorker>(tick).size(), 1u);
    Actions answer = h.On(WorkerProbed{slow, i % 2 == 0, false});
    EXPECT_TRUE(All<SignalWorker>(answer).empty());
  }
  // It finally fails its collective and asks too: same slots, every rank.
  Actions all = h.AskReset({"b:0"});
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().slots.size(), 4u);
  EXPECT_TRUE(h.plan().slots.at("a:0").sync);
  EXPECT_NE(Lines(all).find("asked for a reset without a failed worker"),
            std::string::npos);
}

TEST(JobPolicyElastic, EveryHostFailedEndsTheJobAtOnce) {
  PolicyConfig config = Elastic(2, 2);
  Harness h = Trained(config);  // a:0 a:1 b:0 b:1 with min 2
  h.ExitSlot("a:0", Exit(5));
  h.ExitSlot("a:1", Killed(SIGTERM));
  h.CheckInAll();
  TimePoint failed_at = h.now();
  h.ExitSlot("b:0", Exit(6));
  h.ExitSlot("b:1", Killed(SIGTERM));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.now(), failed_at);  // no wait for the elastic timeout
  EXPECT_NE(h.exit_code(), 0);
  EXPECT_NE(h.log().find("last failure: slot b:0"), std::string::npos)
      << h.log();
}

TEST(JobPolicyElastic, AllBlacklistedBeforeAnyStateFailsAtOnceWithoutCooldown) {
  Harness h(Elastic(2, 2), {{"a", 2}});
  h.Start();
  h.ExitSlot("a:0", Exit(5));  // before any check-in
  h.ExitSlot("a:1", Killed(SIGTERM));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(h.log().find("every host is blacklisted with no cooldown (a)"),
            std::string::npos)
      << h.log();
  EXPECT_NE(h.log().find("last failure: slot a:0 (rank 0) exited with code 5"),
            std::string::npos);
}

TEST(JobPolicyElastic, WithACooldownTheWaitEndsWhenTheHostReturns) {
  PolicyConfig config = Elastic(2, 2);
  config.cooldown = CooldownRange{4s, 8s};
  config.elastic_timeout = 60s;
  Harness h(config, {{"a", 2}});
  h.Start();
  h.ExitSlot("a:0", Exit(5));
  h.ExitSlot("a:1", Killed(SIGTERM));
  EXPECT_FALSE(h.policy().finished());
  EXPECT_EQ(*h.policy().NextDeadline(), h.now() + 4s);
  Actions back = h.ToDeadline();
  EXPECT_EQ(All<StartWorker>(back).size(), 2u);
}

// Every new worker is told the generation it is started for: the one
// published with it. So two processes of one slot never share a
// generation, and their --output-filename files never share a name.
TEST(JobPolicyElastic, StartWorkerCarriesTheGenerationItIsMeantToJoin) {
  PolicyConfig config = Elastic(3, 2);
  config.cooldown = CooldownRange{4s, 8s};
  Harness h(config, {{"a", 2}, {"b", 1}});
  Actions start = h.Start();
  ASSERT_EQ(All<StartWorker>(start).size(), 3u);
  for (const StartWorker& s : All<StartWorker>(start)) {
    EXPECT_EQ(s.generation, 1) << SlotNameOf(s.slot);
  }
  h.CheckInAll();
  // A new host joins generation 2; a second one, before the first checked
  // in, makes generation 3, which only the new slot is started for.
  Actions joined = h.On(HostsDiscovered{{{"a", 2}, {"b", 1}, {"c", 1}}});
  ASSERT_EQ(All<StartWorker>(joined).size(), 1u);
  EXPECT_EQ(All<StartWorker>(joined)[0].generation, 2);
  EXPECT_EQ(h.plan().generation, 2);
  Actions again =
      h.On(HostsDiscovered{{{"a", 2}, {"b", 1}, {"c", 1}, {"d", 1}}});
  ASSERT_EQ(All<StartWorker>(again).size(), 1u);
  EXPECT_EQ(SlotNameOf(All<StartWorker>(again)[0].slot), "d:0");
  EXPECT_EQ(All<StartWorker>(again)[0].generation, 3);
  h.CheckInAll();
  // b's worker dies; after its cooldown the slot gets a new process, for
  // a later generation than its first one.
  const WorkerId first_b = h.worker("b:0");
  h.ExitSlot("b:0", Exit(1));
  const int64_t without_b = h.plan().generation;
  EXPECT_GT(without_b, 3);
  h.CheckInAll();
  Actions back = h.ToDeadline();
  auto starts = All<StartWorker>(back);
  ASSERT_EQ(starts.size(), 1u) << h.log();
  EXPECT_EQ(SlotNameOf(starts[0].slot), "b:0");
  EXPECT_NE(starts[0].worker, first_b);
  EXPECT_EQ(starts[0].generation, without_b + 1);
  EXPECT_EQ(h.plan().generation, without_b + 1);
}

// Each generation says why it was formed and on which hosts; the workers
// record both on the timeline.
TEST(JobPolicyElastic, PlansCarryTheirReasonAndHosts) {
  const std::string long_host(300, 'h');
  Harness h(Elastic(4, 1), {{"a", 2}, {"b", 1}, {long_host, 1}});
  h.Start();
  EXPECT_EQ(h.plan().reason, "start");
  EXPECT_EQ(h.plan().hosts,
            (std::vector<std::string>{"a:2", "b:1", long_host + ":1"}));
  h.CheckInAll();
  h.ExitSlot("b:0", Exit(1));
  EXPECT_EQ(h.plan().reason, "slot b:0 failed; host b blacklisted");
  EXPECT_EQ(h.plan().hosts,
            (std::vector<std::string>{"a:2", long_host + ":1"}));
  h.CheckInAll();
  // A reason naming a long host is cut to the bound.
  h.ExitSlot(long_host + ":0", Exit(1));
  EXPECT_EQ(h.plan().reason.size(), rendezvous::kMaxReasonBytes);
  EXPECT_EQ(h.plan().reason.substr(0, 5), "slot ");
  EXPECT_EQ(h.plan().hosts, std::vector<std::string>{"a:2"});
}

TEST(JobPolicyStatic, StartWorkerHasNoGeneration) {
  Harness h(Static(2));
  Actions start = h.Start();
  ASSERT_EQ(All<StartWorker>(start).size(), 2u);
  for (const StartWorker& s : All<StartWorker>(start)) {
    EXPECT_EQ(s.generation, 0);
  }
}

TEST(JobPolicyElastic, ACooldownPastTheElasticTimeoutEndsTheWaitAtTheTimeout) {
  PolicyConfig config = Elastic(2, 2);
  config.cooldown = CooldownRange{30s, 30s};
  config.elastic_timeout = 5s;
  Harness h(config, {{"a", 2}});
  h.Start();
  h.ExitSlot("a:0", Exit(5));
  h.ExitSlot("a:1", Killed(SIGTERM));
  EXPECT_FALSE(h.policy().finished());
  // The elastic timeout comes before the host's cooldown ends.
  EXPECT_EQ(*h.policy().NextDeadline(), h.now() + 5s);
  Actions timeout = h.ToDeadline();
  EXPECT_TRUE(All<StartWorker>(timeout).empty());
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(h.exit_code(), 0);
  EXPECT_NE(h.log().find("not enough slots for 5 s"), std::string::npos)
      << h.log();
  EXPECT_NE(h.log().find("last failure: slot a:0 (rank 0) exited with code 5"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyElastic, TheFinalMessageListsEveryFailedRankOfAGeneration) {
  Harness h(Elastic(4, 2), {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
  h.Start();
  h.CheckInAll();
  h.ExitSlot("a:0", Exit(3));
  h.ExitSlot("b:0", Exit(4));  // before anyone joined generation 2
  h.On(SignalReceived{SIGTERM});
  h.ExitSlot("c:0", Killed(SIGTERM));
  h.ExitSlot("d:0", Killed(SIGTERM));
  EXPECT_NE(h.log().find("stopped by Terminated; last failure: slot b:0 (rank "
                         "1) exited with code 4; failures in generation 1: "
                         "slot a:0 (rank 0) exited with code 3, slot b:0 (rank "
                         "1) exited with code 4; job failed"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyElastic, TheFinalMessageNamesTheLastFailure) {
  PolicyConfig config = Elastic(4, 4);
  config.elastic_timeout = 5s;
  Harness g = Trained(config);
  g.ExitSlot("a:1", Exit(3));  // a:0 stopped with it
  g.ExitSlot("a:0", Killed(SIGTERM));
  g.ToDeadline();  // not enough slots for 5 s
  g.ExitSlot("b:0", Killed(SIGTERM));
  g.ExitSlot("b:1", Killed(SIGTERM));
  EXPECT_NE(g.log().find("not enough slots for 5 s"), std::string::npos)
      << g.log();
  EXPECT_NE(g.log().find("last failure: slot a:1 (rank 1) exited with code 3"),
            std::string::npos)
      << g.log();
}

}  // namespace
}  // namespace hvd::launcher
