// JobPolicy's slot rules: a failure on a host whose other workers hold the
// committed state takes out only its slot; survivors keep their slots; a
// new worker starts at its slot's index; rank 0 holds the state.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "job_policy_harness.h"
#include "policy/job_policy.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

// One machine with `slots` GPUs, every slot trained (generation 1 joined).
Harness OneMachine(int slots, int min_np,
                   std::optional<CooldownRange> cooldown = std::nullopt) {
  PolicyConfig config = Elastic(slots, min_np);
  config.cooldown = cooldown;
  Harness h(config, {{"a", slots}});
  h.Start();
  h.CheckInAll();
  return h;
}

const common::RankLayout& Layout(const Harness& h, const std::string& slot) {
  return h.plan().slots.at(slot).layout;
}

TEST(JobPolicySlots, OneMachineGoesOnWithTheSurvivorOfAKilledWorker) {
  Harness h = OneMachine(2, 1);
  const WorkerId survivor = h.worker("a:0");
  Actions killed = h.ExitSlot("a:1", Killed(SIGKILL));
  // The survivor holds the committed state: it is not stopped, only told
  // that its world broke.
  EXPECT_TRUE(All<SignalWorker>(killed).empty()) << Lines(killed);
  auto aborts = All<PushAbort>(killed);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].slots, std::vector<std::string>{"a:0"});
  EXPECT_NE(Lines(killed).find("host a stays: blacklisting it would stop "
                               "every worker that holds the committed state; "
                               "slot a:1 is out for good"),
            std::string::npos)
      << Lines(killed);
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().reason, "slot a:1 failed; slot blacklisted, host a kept");
  ASSERT_EQ(h.plan().slots.size(), 1u);
  EXPECT_EQ(h.plan().workers.at("a:0"), survivor);
  EXPECT_EQ(Layout(h, "a:0").rank, 0);
  EXPECT_EQ(Layout(h, "a:0").local_size, 1);
  EXPECT_FALSE(h.policy().finished());
  // Without a cooldown the slot stays out: nothing is due.
  h.CheckInAll();
  EXPECT_FALSE(h.policy().NextDeadline().has_value());
  h.ExitSlot("a:0", Exit(0));
  EXPECT_EQ(h.exit_code(), 0);
  EXPECT_NE(h.log().find("job succeeded after 1 reset"), std::string::npos)
      << h.log();
}

TEST(JobPolicySlots, ASurvivorKeepsItsSlotWhenRankZeroDies) {
  Harness h = OneMachine(3, 1);
  const WorkerId one = h.worker("a:1"), two = h.worker("a:2");
  Actions killed = h.ExitSlot("a:0", Killed(SIGKILL));
  EXPECT_TRUE(All<SignalWorker>(killed).empty()) << Lines(killed);
  // a:1 and a:2 keep their slots (their processes' names) and become
  // local ranks 0 and 1; a:1, a holder, is rank 0.
  ASSERT_EQ(h.plan().slots.size(), 2u);
  EXPECT_EQ(h.plan().workers.at("a:1"), one);
  EXPECT_EQ(h.plan().workers.at("a:2"), two);
  EXPECT_EQ(Layout(h, "a:1").rank, 0);
  EXPECT_EQ(Layout(h, "a:1").local_rank, 0);
  EXPECT_EQ(Layout(h, "a:2").rank, 1);
  EXPECT_EQ(Layout(h, "a:2").local_rank, 1);
  EXPECT_EQ(Layout(h, "a:2").local_size, 2);
  EXPECT_EQ(h.plan().hosts, std::vector<std::string>{"a:2"});
}

TEST(JobPolicySlots, AfterItsCooldownTheFailedSlotRestartsAtItsIndex) {
  Harness h = OneMachine(2, 1, CooldownRange{1s, 4s});
  const WorkerId survivor = h.worker("a:0");
  const TimePoint failed_at = h.now();
  h.ExitSlot("a:1", Exit(1));
  h.CheckInAll();
  ASSERT_EQ(h.policy().NextDeadline(), failed_at + 1s);
  Actions back = h.ToDeadline();
  auto starts = All<StartWorker>(back);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(SlotNameOf(starts[0].slot), "a:1");
  // Its local rank is its slot's index: its name, and the GPU it picks.
  EXPECT_EQ(starts[0].slot.layout.local_rank, 1);
  EXPECT_EQ(starts[0].slot.layout.rank, 1);
  EXPECT_EQ(starts[0].generation, 3);
  EXPECT_EQ(h.plan().reason, "a blacklisted slot's cooldown ended");
  EXPECT_EQ(h.plan().workers.at("a:0"), survivor);
  EXPECT_EQ(Layout(h, "a:0").rank, 0);
  EXPECT_TRUE(All<SignalWorker>(back).empty());
  // The survivor hears of it once the newcomer checked in.
  auto pushes = All<PushHostsUpdated>(h.CheckIn({"a:1"}));
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].slots, std::vector<std::string>{"a:0"});
  h.CheckInAll();
  EXPECT_EQ(h.policy().resets(), 2);
  // A second failure on the host: the same slot again, out twice as long;
  // the survivor is left alone.
  Actions again = h.ExitSlot("a:1", Exit(1));
  EXPECT_TRUE(All<SignalWorker>(again).empty()) << Lines(again);
  EXPECT_NE(Lines(again).find("slot a:1 is out for 2 s"), std::string::npos)
      << Lines(again);
  h.CheckInAll();
  EXPECT_EQ(h.policy().NextDeadline(), h.now() + 2s);
  EXPECT_EQ(All<StartWorker>(h.ToDeadline()).size(), 1u);
}

TEST(JobPolicySlots, ANewcomerFailingBesideTheHolderLeavesItAlone) {
  Harness h = OneMachine(2, 1, CooldownRange{1s, 1s});
  h.ExitSlot("a:1", Exit(1));
  h.CheckInAll();
  h.ToDeadline();  // a:1 starts again, for generation 3
  Actions failed = h.ExitSlot("a:1", Exit(1));  // before checking in
  EXPECT_TRUE(All<SignalWorker>(failed).empty()) << Lines(failed);
  EXPECT_TRUE(All<PushAbort>(failed).empty());
  EXPECT_EQ(h.plan().slots.size(), 1u);
  EXPECT_FALSE(h.policy().finished());
}

TEST(JobPolicySlots, SlotZeroComesBackBehindTheHoldersAsAGroupOfItsOwn) {
  Harness h = OneMachine(3, 1, CooldownRange{1s, 1s});
  const WorkerId one = h.worker("a:1");
  h.ExitSlot("a:0", Killed(SIGKILL));
  h.CheckInAll();
  Actions back = h.ToDeadline();
  auto starts = All<StartWorker>(back);
  ASSERT_EQ(starts.size(), 1u);
  // Slot 0 starts at local rank 0, its GPU; rank 0 stays with a holder.
  EXPECT_EQ(SlotNameOf(starts[0].slot), "a:0");
  EXPECT_EQ(starts[0].slot.layout.local_rank, 0);
  EXPECT_EQ(h.plan().workers.at("a:1"), one);
  EXPECT_EQ(Layout(h, "a:1").rank, 0);
  EXPECT_EQ(Layout(h, "a:2").rank, 1);
  EXPECT_EQ(Layout(h, "a:0").rank, 2);
  // The runtime sees two hosts: local ranks in rank order within each.
  EXPECT_EQ(Layout(h, "a:1").local_rank, 0);
  EXPECT_EQ(Layout(h, "a:1").local_size, 2);
  EXPECT_EQ(Layout(h, "a:0").local_size, 1);
  EXPECT_EQ(Layout(h, "a:0").cross_rank, 1);
  EXPECT_EQ(Layout(h, "a:0").cross_size, 2);
  EXPECT_EQ(Layout(h, "a:2").cross_size, 1);
  EXPECT_TRUE(h.plan().slots.at("a:1").sync);
  EXPECT_EQ(h.plan().hosts, std::vector<std::string>{"a:3"});
  // Once it joined, nothing is left to change: no other generation.
  EXPECT_TRUE(All<PublishGeneration>(h.CheckInAll()).empty());
  EXPECT_EQ(h.plan().generation, 3);
}

TEST(JobPolicySlots, ANewSlotAboveTheHoldersWaitsUntilSlotZeroHoldsTheState) {
  Harness h = OneMachine(3, 1, CooldownRange{1s, 1s});
  h.ExitSlot("a:0", Killed(SIGKILL));
  h.ExitSlot("a:2", Killed(SIGKILL));  // at the same time
  h.CheckInAll();
  // Both come back: a:2 cannot start at local rank 2 behind a:1 alone.
  Actions back = h.ToDeadline();
  auto starts = All<StartWorker>(back);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(SlotNameOf(starts[0].slot), "a:0");
  EXPECT_EQ(h.plan().slots.count("a:2"), 0u);
  // Once a:0 holds the state, the host is in index order again.
  Actions joined = h.CheckInAll();
  starts = All<StartWorker>(joined);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(SlotNameOf(starts[0].slot), "a:2");
  EXPECT_EQ(starts[0].slot.layout.local_rank, 2);
  EXPECT_EQ(h.plan().reason, "held-back slots can start");
  for (int i = 0; i < 3; ++i) {
    const std::string slot = "a:" + std::to_string(i);
    EXPECT_EQ(Layout(h, slot).rank, i) << slot;
    EXPECT_EQ(Layout(h, slot).local_rank, i) << slot;
  }
}

TEST(JobPolicySlots, WithoutACooldownSlotsGoDownToMinNpThenHorovodsRule) {
  Harness h = OneMachine(3, 2);
  h.ExitSlot("a:2", Killed(SIGKILL));
  EXPECT_EQ(h.plan().slots.size(), 2u);
  h.CheckInAll();
  // One more would leave 1 slot of the 2 needed, and none comes back:
  // the host goes, and the job ends at once instead of waiting.
  Actions failed = h.ExitSlot("a:1", Killed(SIGKILL));
  auto stops = All<SignalWorker>(failed);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].worker, h.worker("a:0"));
  EXPECT_NE(Lines(failed).find("host a blacklisted"), std::string::npos)
      << Lines(failed);
  h.ExitSlot("a:0", Killed(SIGTERM));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(h.log().find("every host is blacklisted with no cooldown (a)"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicySlots, BeforeAnyStateIsCommittedHorovodsRuleStands) {
  PolicyConfig config = Elastic(2, 1);
  Harness h(config, {{"a", 2}});
  h.Start();
  Actions failed = h.ExitSlot("a:1", Exit(1));  // nobody checked in yet
  auto stops = All<SignalWorker>(failed);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].worker, h.worker("a:0"));
  EXPECT_EQ(stops[0].signal, SIGTERM);
}

TEST(JobPolicySlots, AHolderOnAnotherHostKeepsHorovodsRule) {
  Harness h = Trained();  // a:0 a:1 b:0 b:1
  Actions failed = h.ExitSlot("a:1", Exit(1));
  auto stops = All<SignalWorker>(failed);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].worker, h.worker("a:0"));
  EXPECT_EQ(h.plan().slots.size(), 2u);
  EXPECT_EQ(h.plan().slots.count("b:0"), 1u);
}

}  // namespace
}  // namespace hvd::launcher
