// JobPolicy's host checks: which hosts are checked before any worker starts
// on them, and what a failed or late check does to a static and an elastic
// job. Synthetic events and times, as in job_policy_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "job_policy_harness.h"
#include "policy/job_policy.h"

namespace hvd::launcher {
namespace {

using namespace policy_test;

PolicyConfig Checked(PolicyConfig config) {
  config.check_hosts = true;
  return config;
}

std::vector<std::string> Checks(const Actions& actions) {
  std::vector<std::string> hosts;
  for (const CheckHost& check : All<CheckHost>(actions)) {
    hosts.push_back(check.host);
  }
  return hosts;
}

HostChecked Passed(const std::string& host) {
  return HostChecked{
      host, true, "", {{"lo", "127.0.0.1"}, {"eth0", "10.0.0.1"}}};
}

HostChecked Failed(const std::string& host) {
  return HostChecked{host,
                     false,
                     "cannot reach host " + host +
                         " over ssh: ssh: connect to host " + host +
                         " port 22: Connection refused",
                     {}};
}

TEST(JobPolicyHostCheck, StaticChecksEveryHostOfItsRanksBeforeAnyWorker) {
  Harness h(Checked(Static(3)), {{"a", 2}, {"b", 2}, {"unused", 1}});
  Actions start = h.Start();
  EXPECT_EQ(Checks(start), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(All<StartWorker>(start).empty());
  // Waiting is not success.
  EXPECT_FALSE(h.policy().finished());
  EXPECT_TRUE(All<StartWorker>(h.On(Passed("b"))).empty());
  EXPECT_TRUE(All<StartWorker>(h.Tick()).empty());
  Actions go = h.On(Passed("a"));
  ASSERT_EQ(All<StartWorker>(go).size(), 3u);
  EXPECT_EQ(All<StartWorker>(go)[0].slot.layout.rank, 0);
  EXPECT_FALSE(h.policy().NextDeadline().has_value());
  h.ExitSlot("a:0", Exit(0));
  h.ExitSlot("a:1", Exit(0));
  h.ExitSlot("b:0", Exit(0));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 0);
}

// A hundred discovered hosts are checked kHostChecksAtOnce at a time (each
// check is an ssh and an errand thread); the next starts as one ends, and
// a waiting check's deadline runs from its own start, so hosts that were
// only waiting their turn are not failed for the slow ones before them.
TEST(JobPolicyHostCheck, ABoundedNumberOfChecksRunAtOnce) {
  std::vector<HostSlots> hosts;
  for (int i = 0; i < 100; ++i) hosts.push_back({"h" + std::to_string(i), 1});
  Harness h(Checked(Elastic(60, 1)), hosts);
  std::vector<std::string> asked = Checks(h.Start());
  ASSERT_EQ(asked.size(), kHostChecksAtOnce);
  EXPECT_EQ(asked.front(), "h0");
  // One answer, one more check.
  std::vector<std::string> next = Checks(h.On(Passed("h0")));
  EXPECT_EQ(next, std::vector<std::string>{"h32"});
  // The running ones hang until their deadline: they fail, and as many
  // start, with deadlines of their own.
  Actions late = h.ToDeadline();
  EXPECT_EQ(Checks(late).size(), kHostChecksAtOnce);
  EXPECT_EQ(Checks(late).front(), "h33");
  EXPECT_NE(Lines(late).find("the check of host h1 did not answer"),
            std::string::npos)
      << Lines(late);
  EXPECT_EQ(Lines(late).find("host h33 did not answer"), std::string::npos);
  for (int i = 33; i < 100; ++i) {
    asked = Checks(h.On(Passed("h" + std::to_string(i))));
    for (const std::string& host : asked) EXPECT_NE(host, "h1");
  }
  // Every host was checked once; the 68 that passed form the job.
  EXPECT_EQ(h.plan().slots.size(), 68u) << h.log();
}

TEST(JobPolicyHostCheck, StaticFailsWithOneLinePerFailedHostAndNoWorker) {
  Harness h(Checked(Static(3)), {{"a", 1}, {"b", 1}, {"c", 1}});
  h.Start();
  Actions first = h.On(Failed("c"));
  EXPECT_EQ(Lines(first),
            "cannot reach host c over ssh: ssh: connect to host c port 22: "
            "Connection refused\n");
  EXPECT_FALSE(h.policy().finished());  // b and a are still being checked
  h.On(Passed("a"));
  Actions last = h.On(Failed("b"));
  EXPECT_TRUE(All<StartWorker>(last).empty());
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
  EXPECT_NE(h.log().find("2 of 3 hosts failed the check before launch; no "
                         "worker was started; job failed (exit code 1)"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyHostCheck, AHostWithNoneOfTheInterfacesFailsNamingThem) {
  PolicyConfig config = Checked(Static(1));
  config.network_interfaces = {"nosuch0", "ib0"};
  Harness h(config, {{"a", 1}});
  h.Start();
  h.On(Passed("a"));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
  EXPECT_NE(h.log().find("host a has none of the network interfaces "
                         "nosuch0,ib0 (--network-interfaces) with an IPv4 "
                         "address; it has: lo, eth0\n"),
            std::string::npos)
      << h.log();
  // One of the list is enough.
  config.network_interfaces = {"nosuch0", "eth0"};
  Harness ok(config, {{"a", 1}});
  ok.Start();
  EXPECT_EQ(All<StartWorker>(ok.On(Passed("a"))).size(), 1u);
}

TEST(JobPolicyHostCheck, AcrossMachinesALoopbackInterfaceDoesNotCount) {
  PolicyConfig config = Checked(Static(1));
  config.network_interfaces = {"lo"};
  config.loopback_interfaces_count = false;
  Harness across(config, {{"a", 1}});
  across.Start();
  EXPECT_TRUE(All<StartWorker>(across.On(Passed("a"))).empty());
  EXPECT_EQ(across.exit_code(), 1);
  config.loopback_interfaces_count = true;
  Harness alone(config, {{"a", 1}});
  alone.Start();
  EXPECT_EQ(All<StartWorker>(alone.On(Passed("a"))).size(), 1u);
}

TEST(JobPolicyHostCheck, ACheckOutlivingItsDeadlineFailsAndItsAnswerIsIgnored) {
  PolicyConfig config = Checked(Static(2));
  config.start_timeout = 3s;
  config.host_check_grace = 5s;
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(Passed("a"));
  ASSERT_EQ(h.policy().NextDeadline(), kT0 + 8s);
  Actions late = h.ToDeadline();
  EXPECT_NE(Lines(late).find("the check of host b did not answer within 8 s"),
            std::string::npos)
      << Lines(late);
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
  EXPECT_TRUE(h.On(Passed("b")).empty());
}

TEST(JobPolicyHostCheck, ASignalWhileCheckingStopsAtOnce) {
  Harness h(Checked(Static(2)), {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(SignalReceived{SIGTERM});
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 128 + SIGTERM);
  EXPECT_TRUE(All<StartWorker>(h.On(Passed("a"))).empty());
}

TEST(JobPolicyHostCheck, ElasticFirstGenerationWaitsForEveryCheck) {
  Harness h(Checked(Elastic(1, 1)), {{"a", 1}, {"b", 1}});
  Actions start = h.Start();
  EXPECT_EQ(Checks(start), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(All<PublishGeneration>(start).empty());
  EXPECT_EQ(Lines(start), "");  // no "waiting for slots" while checking
  EXPECT_TRUE(All<PublishGeneration>(h.On(Passed("b"))).empty());
  Actions go = h.On(Passed("a"));
  ASSERT_EQ(All<PublishGeneration>(go).size(), 1u);
  EXPECT_EQ(h.plan().generation, 1);
  EXPECT_EQ(h.rank("a:0"), 0);  // first-seen order, whoever answered first
  EXPECT_EQ(h.rank("b:0"), 1);
}

TEST(JobPolicyHostCheck, ElasticBlacklistsAFailedHostAndGoesOnWithTheOthers) {
  Harness h(Checked(Elastic(1, 1)), {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(Passed("a"));
  Actions failed = h.On(Failed("b"));
  EXPECT_NE(Lines(failed).find("cannot reach host b over ssh: ssh: connect to "
                               "host b port 22: Connection refused; host b "
                               "blacklisted"),
            std::string::npos)
      << Lines(failed);
  auto starts = All<StartWorker>(failed);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].slot.host, "a");
  EXPECT_EQ(h.plan().slots.size(), 1u);
  // Without a cooldown it is never checked again, whatever discovery says.
  EXPECT_TRUE(Checks(h.On(HostsDiscovered{{{"a", 1}, {"b", 1}}})).empty());
  h.CheckInAll();
  h.ExitSlot("a:0", Exit(0));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 0);
}

TEST(JobPolicyHostCheck, ElasticFailsAtOnceWhenEveryHostFailedItsCheck) {
  Harness h(Checked(Elastic(2, 1)), {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(Failed("a"));
  h.On(Failed("b"));
  EXPECT_TRUE(h.policy().finished());
  EXPECT_EQ(h.exit_code(), 1);
  EXPECT_NE(h.log().find("every host is blacklisted with no cooldown (a, b)"),
            std::string::npos)
      << h.log();
  EXPECT_NE(h.log().find("last failure: host b failed its check: cannot reach "
                         "host b over ssh"),
            std::string::npos)
      << h.log();
}

TEST(JobPolicyHostCheck, ElasticNeverStartsWorkersOnAnUncheckedHost) {
  Harness h(Checked(Elastic(1, 1)), {{"a", 1}});
  h.Start();
  h.On(Passed("a"));
  h.CheckInAll();
  // A host discovery adds is checked first; until it passes, no generation
  // includes it.
  Actions discovered = h.On(HostsDiscovered{{{"a", 1}, {"c", 2}}});
  EXPECT_EQ(Checks(discovered), (std::vector<std::string>{"c"}));
  EXPECT_TRUE(All<StartWorker>(discovered).empty());
  EXPECT_TRUE(All<PublishGeneration>(discovered).empty());
  h.Advance(1s);
  EXPECT_TRUE(All<StartWorker>(h.Tick()).empty());
  Actions passed = h.On(Passed("c"));
  ASSERT_EQ(All<PublishGeneration>(passed).size(), 1u);
  auto starts = All<StartWorker>(passed);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].slot.host, "c");
}

TEST(JobPolicyHostCheck, ElasticChecksAHostAgainWhenItsCooldownEnds) {
  PolicyConfig config = Checked(Elastic(1, 1));
  config.cooldown = CooldownRange{10s, 10s};
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(Passed("a"));
  h.On(Failed("b"));
  h.CheckInAll();
  // The cooldown's end asks for a new check, which lets it back in.
  ASSERT_EQ(h.policy().NextDeadline(), kT0 + 10s);
  Actions cooled = h.ToDeadline();
  EXPECT_EQ(Checks(cooled), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(All<StartWorker>(cooled).empty());
  Actions back = h.On(Passed("b"));
  ASSERT_EQ(All<StartWorker>(back).size(), 1u);
  EXPECT_EQ(All<StartWorker>(back)[0].slot.host, "b");
  // A worker's failure blacklists its host; it is checked again too.
  h.CheckInAll();
  h.ExitSlot("b:0", Exit(1));
  h.Advance(10s);  // the second blacklisting of b: min(10, 10 * 2) s
  EXPECT_EQ(Checks(h.Tick()), (std::vector<std::string>{"b"}));
}

TEST(JobPolicyHostCheck, ElasticCheckDeadlineBlacklistsTheHost) {
  PolicyConfig config = Checked(Elastic(1, 1));
  config.start_timeout = 2s;
  config.host_check_grace = 5s;
  Harness h(config, {{"a", 1}, {"b", 1}});
  h.Start();
  h.On(Passed("a"));
  ASSERT_EQ(h.policy().NextDeadline(), kT0 + 7s);
  Actions late = h.ToDeadline();
  EXPECT_NE(Lines(late).find("the check of host b did not answer within 7 s; "
                             "host b blacklisted"),
            std::string::npos)
      << Lines(late);
  ASSERT_EQ(All<StartWorker>(late).size(), 1u);
  EXPECT_EQ(All<StartWorker>(late)[0].slot.host, "a");
  EXPECT_TRUE(h.On(Passed("b")).empty());
}

TEST(JobPolicyHostCheck, FromTurnsTheCheckOnAndSplitsTheInterfaceList) {
  LaunchConfig launch;
  launch.num_proc = 1;
  launch.network_interface = "nosuch0,eth0";
  PolicyConfig config = PolicyConfig::From(launch);
  EXPECT_TRUE(config.check_hosts);
  EXPECT_EQ(config.network_interfaces,
            (std::vector<std::string>{"nosuch0", "eth0"}));
}

}  // namespace
}  // namespace hvd::launcher
