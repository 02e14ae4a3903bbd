#include "cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <unistd.h>

#include "worker_env.h"

namespace hvd::launcher {
namespace {

CliOutcome Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hvdrun");
  return ParseCommandLine(args);
}

TEST(CliTest, NpAndCommandWithItsOwnFlags) {
  CliOutcome out =
      Parse({"-np", "4", "python", "train.py", "-np", "--lr", "1"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->num_proc, 4);
  EXPECT_EQ(
      out.config->command,
      (std::vector<std::string>{"python", "train.py", "-np", "--lr", "1"}));
  ASSERT_EQ(out.config->hosts.size(), 1u);
  EXPECT_EQ(out.config->hosts[0].host, "localhost");
  EXPECT_EQ(out.config->hosts[0].slots, 4);
}

TEST(CliTest, HostsDefaultNpToAllSlotsAndKnobsParse) {
  CliOutcome out = Parse({"-H", "a:2,b,c:3", "--fusion-threshold-mb", "32",
                          "--cycle-time-ms", "2.5", "--cache-capacity", "0",
                          "--gloo-timeout-seconds", "9", "-p", "2222", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->num_proc, 6);
  ASSERT_EQ(out.config->hosts.size(), 3u);
  EXPECT_EQ(out.config->hosts[1].host, "b");
  EXPECT_EQ(out.config->hosts[1].slots, 1);
  EXPECT_EQ(*out.config->fusion_threshold_mb, 32.0);
  EXPECT_EQ(*out.config->cycle_time_ms, 2.5);
  EXPECT_EQ(*out.config->cache_capacity, 0);
  EXPECT_EQ(*out.config->gloo_timeout_seconds, 9);
  EXPECT_EQ(out.config->ssh_port, 2222);
}

// The worker environment that `args` (before the command) produce, or an
// empty map when parsing fails.
std::map<std::string, std::string> EnvOf(std::vector<std::string> args) {
  args.insert(args.begin(), {"-np", "1"});
  args.push_back("cmd");
  CliOutcome out = Parse(args);
  EXPECT_TRUE(out.config) << args[2];
  if (!out.config) return {};
  SlotAssignment slot{"localhost", 0, 1, 0, 1, 0, 1};
  EnvList env = WorkerEnvironment(slot, {"127.0.0.1", 1, "s"}, *out.config);
  return {env.begin(), env.end()};
}

TEST(CliTest, TimelineAndCacheFlagsReachTheWorkers) {
  auto env = EnvOf({"--timeline-filename", "/tmp/t.json",
                    "--timeline-mark-cycles", "--disable-cache"});
  EXPECT_EQ(env["HOROVOD_TIMELINE"], "/tmp/t.json");
  EXPECT_EQ(env["HOROVOD_TIMELINE_MARK_CYCLES"], "1");
  EXPECT_EQ(env["HOROVOD_CACHE_CAPACITY"], "0");
  env = EnvOf({"--cache-capacity", "512"});
  EXPECT_EQ(env["HOROVOD_CACHE_CAPACITY"], "512");
  EXPECT_EQ(env.count("HOROVOD_TIMELINE_MARK_CYCLES"), 0u);
}

TEST(CliTest, AutotuneFlagsReachTheWorkers) {
  auto env =
      EnvOf({"--autotune", "--autotune-log-file", "/tmp/tune.csv",
             "--autotune-warmup-samples", "0", "--autotune-steps-per-sample",
             "5", "--autotune-bayes-opt-max-samples", "30"});
  EXPECT_EQ(env["HOROVOD_AUTOTUNE"], "1");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_LOG"], "/tmp/tune.csv");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_WARMUP_SAMPLES"], "0");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"], "5");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"], "30");
  env = EnvOf({"--autotune"});
  EXPECT_EQ(env["HOROVOD_AUTOTUNE"], "1");
  for (const char* name :
       {"HOROVOD_AUTOTUNE_LOG", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
        "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
        "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"}) {
    EXPECT_EQ(env.count(name), 0u) << name;
  }
  env = EnvOf({});
  EXPECT_EQ(env.count("HOROVOD_AUTOTUNE"), 0u);
}

TEST(CliTest, StallCheckFlagsReachTheWorkers) {
  auto env = EnvOf({"--stall-check-warning-time-seconds", "30",
                    "--stall-check-shutdown-time-seconds", "120"});
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_TIME_SECONDS"], "30");
  EXPECT_EQ(env["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"], "120");
  EXPECT_EQ(env.count("HOROVOD_STALL_CHECK_DISABLE"), 0u);
  env = EnvOf({"--stall-check-shutdown-time-seconds", "0"});
  EXPECT_EQ(env["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"], "0");
  env = EnvOf({"--no-stall-check"});
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_DISABLE"], "1");
  EXPECT_EQ(env.count("HOROVOD_STALL_CHECK_TIME_SECONDS"), 0u);
}

TEST(CliTest, BadTuningFlagsAreUsageErrors) {
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--disable-cache", "--cache-capacity", "10"},
           {"--autotune-log-file", "/tmp/x.csv"},  // needs --autotune
           {"--autotune-warmup-samples", "2"},
           {"--autotune", "--autotune-warmup-samples", "-1"},
           {"--autotune", "--autotune-steps-per-sample", "0"},
           {"--autotune", "--autotune-steps-per-sample", "x"},
           {"--autotune", "--autotune-bayes-opt-max-samples", "0"},
           {"--no-stall-check", "--stall-check-warning-time-seconds", "5"},
           {"--no-stall-check", "--stall-check-shutdown-time-seconds", "5"},
           {"--stall-check-warning-time-seconds", "0"},
           {"--stall-check-shutdown-time-seconds", "-1"},
           {"--stall-check-warning-time-seconds", "60",
            "--stall-check-shutdown-time-seconds", "30"},
       }) {
    std::vector<std::string> args = {"-np", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("cmd");
    CliOutcome out = Parse(args);
    EXPECT_FALSE(out.config) << flags[0] << " " << flags[1];
    EXPECT_EQ(out.exit_code, 2);
  }
}

TEST(CliTest, BadValuesAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-np", "x", "cmd"},
           {"-np", "3", "-H", "a:1", "cmd"},
           {"-H", "a:0", "cmd"},
           {"-H", "bad host:1", "cmd"},
           {"-np", "2"},
           {"cmd"},
           {"-np", "1", "--log-level", "noisy", "cmd"},
           {"-np", "1", "-p", "70000", "cmd"}}) {
    CliOutcome out = Parse(args);
    EXPECT_FALSE(out.config) << args[0] << " " << args[1];
    EXPECT_EQ(out.exit_code, 2);
  }
}

TEST(CliTest, HostfileLines) {
  std::string path = ::testing::TempDir() + "/hosts";
  std::ofstream(path)
      << "# comment\n\nnode1 slots=2\nnode2:3  # inline\nnode3\n";
  auto hosts = ParseHostfile(path);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[1].host, "node2");
  EXPECT_EQ((*hosts)[1].slots, 3);
  EXPECT_EQ((*hosts)[2].slots, 1);
  std::ofstream(path) << "node1 cores=2\n";
  auto bad = ParseHostfile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1"), std::string::npos);
  std::remove(path.c_str());
}

TEST(CliTest, ElasticFlags) {
  char script[] = "/tmp/hvd_cli_discover_XXXXXX";
  int fd = mkstemp(script);
  ASSERT_GE(fd, 0);
  close(fd);
  CliOutcome out = Parse({"-np",
                          "2",
                          "--min-np",
                          "1",
                          "--max-np",
                          "8",
                          "--host-discovery-script",
                          script,
                          "--slots-per-host",
                          "3",
                          "--elastic-timeout",
                          "30",
                          "--reset-limit",
                          "5",
                          "--blacklist-cooldown-range",
                          "2",
                          "9",
                          "--discovery-interval",
                          "0.5",
                          "python",
                          "train.py"});
  std::remove(script);
  ASSERT_TRUE(out.config);
  const LaunchConfig& c = *out.config;
  EXPECT_TRUE(c.elastic);
  EXPECT_EQ(c.num_proc, 2);
  EXPECT_EQ(c.min_np, 1);
  EXPECT_EQ(c.max_np, 8);
  EXPECT_EQ(c.slots_per_host, 3);
  EXPECT_EQ(c.elastic_timeout, std::chrono::seconds(30));
  EXPECT_EQ(*c.reset_limit, 5);
  EXPECT_EQ(*c.cooldown_range, std::make_pair(2, 9));
  EXPECT_EQ(c.discovery_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(c.command, (std::vector<std::string>{"python", "train.py"}));
}

TEST(CliTest, MinNpWithFixedHostsIsElastic) {
  CliOutcome out = Parse(
      {"-np", "4", "--min-np", "2", "-H", "localhost:2,127.0.0.1:2", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_TRUE(out.config->elastic);
  EXPECT_EQ(out.config->hosts.size(), 2u);
  CliOutcome plain = Parse({"-np", "4", "cmd"});
  ASSERT_TRUE(plain.config);
  EXPECT_FALSE(plain.config->elastic);
}

TEST(CliTest, BadElasticValuesAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-np", "2", "--min-np", "3", "-H", "a:4", "cmd"},
           {"-np", "4", "--min-np", "2", "--max-np", "3", "-H", "a:4", "cmd"},
           {"--min-np", "2", "--blacklist-cooldown-range", "9", "2", "-H",
            "a:4", "cmd"},
           {"--min-np", "2", "--blacklist-cooldown-range", "1", "-H", "a:4",
            "cmd"},
           {"--host-discovery-script", "/nonexistent/discover.sh", "-np", "2",
            "cmd"},
       }) {
    CliOutcome out = Parse(args);
    EXPECT_FALSE(out.config) << args[0] << " " << args[1] << " " << args[2];
    EXPECT_EQ(out.exit_code, 2);
  }
}

}  // namespace
}  // namespace hvd::launcher
