// JobPolicy's endings: a job that cannot start stops after kStartAttempts
// starts that failed the same way; each generation says its real cause;
// the final lines carry horovodrun's words for the endings it names; a
// signal stops every state.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "job_policy_harness.h"
#include "policy/job_policy.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

constexpr char kProcessesFailed[] =
    "Horovod detected that one or more processes exited with non-zero "
    "status, thus causing the job to be terminated";

// hvdrun's last `n` lines, oldest first.
std::vector<std::string> LastLines(const std::string& log, size_t n) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    lines.push_back(log.substr(begin, end - begin));
    begin = end + 1;
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - n);
  return lines;
}

std::vector<std::string> Reasons(const std::vector<std::string>& log_lines) {
  std::vector<std::string> reasons;
  for (const std::string& line : log_lines) {
    if (line.rfind("generation ", 0) == 0) {
      reasons.push_back(line.substr(line.find('(') + 1,
                                    line.find("): ") - line.find('(') - 1));
    }
  }
  return reasons;
}

std::vector<std::string> AllLines(const std::string& log) {
  return LastLines(log, log.size());
}

// One machine of two slots with a cooldown: the worker of a:0 fails as
// `how` says, and a:1's is stopped with its host.
void FailBoth(Harness& h, int wait_status) {
  h.ExitSlot("a:0", wait_status);
  h.ExitSlot("a:1", Killed(SIGTERM));
}

PolicyConfig WithCooldown(PolicyConfig config) {
  config.cooldown = CooldownRange{1s, 2s};
  return config;
}

TEST(JobPolicyRestarts, AJobWhoseWorkersNeverCheckInStopsAfterAFewStarts) {
  Harness h(WithCooldown(Elastic(2, 2)), {{"a", 2}});
  h.Start();
  for (int start = 1; start < kStartAttempts; ++start) {
    FailBoth(h, Exit(2));  // python: can't open file
    ASSERT_FALSE(h.policy().finished()) << h.log();
    // Discovery reports the same host while it cools down: no cause.
    h.Advance(500ms);
    EXPECT_TRUE(
        All<PublishGeneration>(h.On(HostsDiscovered{{{"a", 2}}})).empty());
    h.ToDeadline();
    ASSERT_EQ(h.plan().generation, start + 1) << h.log();
  }
  FailBoth(h, Exit(2));
  EXPECT_TRUE(h.policy().finished()) << h.log();
  EXPECT_EQ(h.exit_code(), 2);
  EXPECT_EQ(
      Reasons(AllLines(h.log())),
      (std::vector<std::string>{"start", "a blacklisted host's cooldown ended",
                                "a blacklisted host's cooldown ended"}));
  auto last = LastLines(h.log(), 2);
  EXPECT_EQ(last[0], kProcessesFailed);
  EXPECT_EQ(last[1].rfind("the job cannot start: 3 worker starts in a row "
                          "failed the same way before any worker checked in "
                          "to the rendezvous (hvd.init()): exited with code 2",
                          0),
            0u)
      << last[1];
}

TEST(JobPolicyRestarts, ACooldownEndingWithADiscoveryRunIsNamedAsSuch) {
  Harness h(WithCooldown(Elastic(2, 2)), {{"a", 2}});
  h.Start();
  FailBoth(h, Exit(2));
  // The discovery run comes just after the cooldown ended, before the
  // timer: the generation is still the cooldown's.
  h.Advance(1s);
  h.On(HostsDiscovered{{{"a", 2}}});
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().reason, "a blacklisted host's cooldown ended");
}

TEST(JobPolicyRestarts, AHostBackFromItsCooldownIsNamedSoOnceChecked) {
  PolicyConfig config = WithCooldown(Elastic(2, 2));
  config.check_hosts = true;
  Harness h(config, {{"a", 2}});
  const HostChecked passed{"a", true, "", {{"lo", "127.0.0.1"}}};
  h.Start();
  h.On(passed);
  FailBoth(h, Exit(2));
  Actions cooled = h.ToDeadline();
  ASSERT_EQ(All<CheckHost>(cooled).size(), 1u);  // checked again first
  EXPECT_EQ(h.plan().generation, 1);
  h.On(passed);
  EXPECT_EQ(h.plan().generation, 2);
  EXPECT_EQ(h.plan().reason, "a blacklisted host's cooldown ended");
}

TEST(JobPolicyRestarts, OnlyFailuresOfTheSameWayInARowCount) {
  Harness h(WithCooldown(Elastic(2, 2)), {{"a", 2}});
  h.Start();
  for (int code : {2, 1, 1}) {
    FailBoth(h, Exit(code));
    ASSERT_FALSE(h.policy().finished()) << h.log();
    h.ToDeadline();
  }
  FailBoth(h, Exit(1));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
}

TEST(JobPolicyRestarts, AWorkerStillStartingMayYetCheckIn) {
  PolicyConfig config = WithCooldown(Elastic(2, 1));
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  // b's worker fails again and again while a's is still importing.
  for (int start = 0; start < kStartAttempts; ++start) {
    h.ExitSlot("b:0", Exit(2));
    ASSERT_FALSE(h.policy().finished()) << h.log();
    h.ToDeadline();
    ASSERT_TRUE(h.has_worker("b:0")) << h.log();
  }
  // Once a worker checked in, the job has started: failures are resets.
  h.CheckIn({"a:0"});
  h.ExitSlot("b:0", Exit(2));
  EXPECT_FALSE(h.policy().finished()) << h.log();
  EXPECT_EQ(h.log().find("cannot start"), std::string::npos) << h.log();
}

TEST(JobPolicyRestarts, StartsThatNeverCheckInWithinTheStartTimeoutCount) {
  PolicyConfig config = WithCooldown(Elastic(1, 1));
  config.start_timeout = 5s;
  Harness h(config, {{"a", 1}});
  h.Start();
  for (int start = 1; start <= kStartAttempts; ++start) {
    ASSERT_FALSE(h.policy().finished()) << h.log();
    h.ToDeadline();  // the start timeout: killed
    h.ExitSlot("a:0", Killed(SIGKILL));
    if (start < kStartAttempts) h.ToDeadline();  // the cooldown
  }
  EXPECT_TRUE(h.policy().finished());
  EXPECT_NE(h.log().find("failed the same way before any worker checked in "
                         "to the rendezvous (hvd.init()): did not check in "
                         "within 5 s of its start (--start-timeout); killed"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyRestarts, TheSameDiscoveryResultFormsNoGeneration) {
  PolicyConfig config = Elastic(2, 1);
  config.cooldown = CooldownRange{10s, 10s};
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  h.CheckInAll();
  h.ExitSlot("a:0", Exit(1));
  h.CheckInAll();
  h.Advance(10s);
  h.Tick();  // a is back, behind b, which holds the state
  h.CheckInAll();
  ASSERT_EQ(h.rank("b:0"), 0);
  const int64_t generation = h.plan().generation;
  // First-seen order would put a first: a new order alone is no cause.
  Actions same = h.On(HostsDiscovered{{{"a", 1}, {"b", 1}}});
  EXPECT_TRUE(All<PublishGeneration>(same).empty()) << Lines(same);
  EXPECT_EQ(h.plan().generation, generation);
}

// ---- horovodrun's words in the final lines ----

TEST(JobPolicyHorovodWords, AStaticJobsFailedRank) {
  Harness h(Static(2), {{"a", 2}});
  h.Start();
  h.ExitSlot("a:1", Exit(3));
  h.ExitSlot("a:0", Killed(SIGTERM));
  auto last = LastLines(h.log(), 2);
  EXPECT_EQ(last[0], kProcessesFailed);
  EXPECT_EQ(last[1],
            "rank 1 on host a exited with code 3; job failed (exit code 3)");
}

TEST(JobPolicyHorovodWords, EveryHostBlacklisted) {
  Harness h(Elastic(2, 2), {{"a", 2}});
  h.Start();
  h.ExitSlot("a:0", Exit(5));
  h.ExitSlot("a:1", Killed(SIGTERM));
  auto last = LastLines(h.log(), 2);
  EXPECT_EQ(last[0], kProcessesFailed);
  EXPECT_NE(last[1].find("every host is blacklisted with no cooldown (a)"),
            std::string::npos)
      << last[1];
}

TEST(JobPolicyHorovodWords, TheResetLimit) {
  PolicyConfig config = Elastic(4, 1);
  config.reset_limit = 1;
  Harness h(config, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
  h.Start();
  h.CheckInAll();
  h.ExitSlot("d:0", Exit(1));
  h.CheckInAll();
  h.ExitSlot("c:0", Exit(1));
  for (const char* slot : {"a:0", "b:0"}) h.ExitSlot(slot, Killed(SIGTERM));
  auto last = LastLines(h.log(), 2);
  EXPECT_EQ(last[0],
            "Horovod was shutdown because number of resets during elastic job "
            "exceeded limit: 1");
  EXPECT_EQ(last[1].rfind("reset limit of 1 exceeded", 0), 0u) << last[1];
}

TEST(JobPolicyHorovodWords, TheElasticTimeout) {
  PolicyConfig config = Elastic(4, 4);
  config.elastic_timeout = 3s;
  Harness h(config, {{"a", 2}});
  h.Start();
  h.ToDeadline();
  auto last = LastLines(h.log(), 2);
  EXPECT_EQ(last[0],
            "Timed out waiting for minimum number of slots to become "
            "available. Please check that you have enough resources to run at "
            "least 4 Horovod processes. Timeout after 3 seconds.");
  EXPECT_EQ(last[1].rfind("not enough slots for 3 s (--min-np 4)", 0), 0u)
      << last[1];
}

TEST(JobPolicyHorovodWords, NoneForASignalOrASuccess) {
  Harness stopped(Elastic(2, 2), {{"a", 2}});
  stopped.Start();
  stopped.On(SignalReceived{SIGTERM});
  for (const char* slot : {"a:0", "a:1"}) {
    stopped.ExitSlot(slot, Killed(SIGTERM));
  }
  EXPECT_EQ(stopped.log().find("Horovod"), std::string::npos) << stopped.log();
  Harness done = Trained();
  for (const char* slot : {"a:0", "a:1", "b:0", "b:1"}) {
    done.ExitSlot(slot, Exit(0));
  }
  EXPECT_EQ(done.exit_code(), 0);
  EXPECT_EQ(done.log().find("Horovod"), std::string::npos) << done.log();
}

// ---- signals in every state ----

TEST(JobPolicySignals, EveryStateStopsOnSigterm) {
  struct State {
    const char* name;
    std::function<void(Harness&)> reach;
  };
  std::vector<State> states = {
      {"starting", [](Harness&) {}},
      {"running", [](Harness& h) { h.CheckInAll(); }},
      {"waiting for slots",
       [](Harness& h) {
         h.CheckInAll();
         h.ExitSlot("a:0", Exit(1));
         h.ExitSlot("a:1", Killed(SIGTERM));
       }},
      {"waiting for check-ins",
       [](Harness& h) {
         h.CheckInAll();
         h.On(HostsDiscovered{{{"a", 2}, {"b", 2}, {"c", 1}}});
       }},
      {"resetting",
       [](Harness& h) {
         h.CheckInAll();
         h.AskReset({"a:0"});
       }},
  };
  for (const State& state : states) {
    SCOPED_TRACE(state.name);
    Harness h(Elastic(4, 3));
    h.Start();
    state.reach(h);
    ASSERT_FALSE(h.policy().finished());
    Actions stop = h.On(SignalReceived{SIGTERM});
    std::set<WorkerId> told;
    for (const SignalWorker& s : All<SignalWorker>(stop)) told.insert(s.worker);
    for (const char* slot : {"a:0", "a:1", "b:0", "b:1", "c:0"}) {
      if (h.has_worker(slot)) {
        EXPECT_TRUE(told.count(h.worker(slot))) << slot;
      }
    }
    for (const char* slot : {"a:0", "a:1", "b:0", "b:1", "c:0"}) {
      if (h.has_worker(slot)) h.ExitSlot(slot, Killed(SIGTERM));
    }
    EXPECT_TRUE(h.policy().finished());
    EXPECT_EQ(h.exit_code(), 128 + SIGTERM);
    EXPECT_FALSE(h.policy().NextDeadline().has_value());
  }
}

TEST(JobPolicySignals, StoppingThenASignalKillsAtOnce) {
  Harness h = Trained();
  h.ExitSlot("a:0", Exit(1));
  h.On(HostsDiscovered{{}});  // nothing left to run on: waiting
  h.On(SignalReceived{SIGTERM});
  Actions again = h.On(SignalReceived{SIGTERM});
  for (const SignalWorker& s : All<SignalWorker>(again)) {
    EXPECT_EQ(s.signal, SIGKILL);
  }
  EXPECT_FALSE(All<SignalWorker>(again).empty());
}

// ---- another hvdrun leads the job in etcd ----

TEST(JobPolicyLeadTaken, StopsEveryWorkerSayingWhoLeadsAndFails) {
  Harness h = Trained();
  Actions stop =
      h.On(LeadTaken{"another hvdrun leads the job now (hvdrun pid 7 on x)"});
  EXPECT_NE(Lines(stop).find("another hvdrun leads the job now (hvdrun pid 7 "
                             "on x); stopping 4 workers"),
            std::string::npos)
      << Lines(stop);
  std::set<WorkerId> told;
  for (const SignalWorker& s : All<SignalWorker>(stop)) {
    EXPECT_EQ(s.signal, SIGTERM);
    told.insert(s.worker);
  }
  EXPECT_EQ(told.size(), 4u);
  for (const char* slot : {"a:0", "a:1", "b:0", "b:1"}) {
    h.ExitSlot(slot, Killed(SIGTERM));
  }
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
}

}  // namespace
}  // namespace hvd::launcher
