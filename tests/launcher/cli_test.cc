#include "options/cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <unistd.h>

#include "cli_test_support.h"
#include "hvd/common/build_info.h"
#include "job/host_slots.h"
#include "job/worker_env.h"

namespace hvd::launcher {
namespace {

using namespace cli_test;

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

// Sets Slurm's variables of an allocation for one test.
class SlurmAllocationCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("SLURM_JOB_ID", "42", 1);
    setenv("SLURM_JOB_NODELIST", "n[1-3]", 1);
    setenv("SLURM_TASKS_PER_NODE", "2(x3)", 1);
  }
  void TearDown() override {
    for (const char* name :
         {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE"}) {
      unsetenv(name);
    }
  }
};

TEST_F(SlurmAllocationCliTest, WorkerStepsCannotWaitToBeAdopted) {
  EXPECT_NE(ErrorOf({"--rendezvous-backend", "etcd", "--rendezvous-endpoint",
                     "e1:2379", "--adopt-grace-seconds", "30", "cmd"})
                .find("--adopt-grace-seconds: Slurm ends a worker step whose "
                      "srun is gone"),
            std::string::npos);
  EXPECT_TRUE(
      Parse({"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
             "--launcher", "ssh", "--adopt-grace-seconds", "30", "cmd"})
          .config);
}

TEST_F(SlurmAllocationCliTest, HostsAndSlotsComeFromTheAllocation) {
  CliOutcome out = Parse({"cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->launcher, Launcher::kSlurm);
  EXPECT_EQ(out.config->num_proc, 6);
  ASSERT_EQ(out.config->hosts.size(), 3u);
  EXPECT_EQ(out.config->hosts[2].host, "n3");
  EXPECT_EQ(out.config->hosts[2].slots, 2);
  ASSERT_TRUE(out.config->slurm);
  EXPECT_EQ(out.config->slurm->job_id, "42");
}

TEST_F(SlurmAllocationCliTest, ElasticUsesTheSlurmDiscoveryScript) {
  CliOutcome out = Parse({"-np", "4", "--min-np", "2", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_TRUE(out.config->elastic);
  EXPECT_TRUE(out.config->hosts.empty());
  const std::string& script = out.config->discovery_script;
  EXPECT_EQ(script.substr(script.rfind('/') + 1), "hvd-slurm-discover");
}

TEST_F(SlurmAllocationCliTest, TooManyWorkersSaysHowToAskForMore) {
  CliOutcome out = Parse({"-np", "7", "cmd"});
  ASSERT_FALSE(out.config);
  EXPECT_NE(out.exit_code, 0);
}

TEST_F(SlurmAllocationCliTest, LauncherAndHostsCanBeOverridden) {
  CliOutcome out = Parse({"--launcher", "ssh", "-H", "x:1", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->launcher, Launcher::kSsh);
  EXPECT_EQ(out.config->hosts[0].host, "x");
  EXPECT_FALSE(out.config->slurm);
  out = Parse({"--launcher", "local", "-np", "2", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->launcher, Launcher::kLocal);
  ASSERT_EQ(out.config->hosts.size(), 1u);  // this machine only
  EXPECT_EQ(out.config->hosts[0].host, "localhost");
}

TEST(CliTest, SlurmLauncherOutsideAnAllocationIsAUsageError) {
  unsetenv("SLURM_JOB_ID");
  CliOutcome out = Parse({"--launcher", "slurm", "-np", "2", "cmd"});
  EXPECT_FALSE(out.config);
  EXPECT_NE(out.exit_code, 0);
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
  EXPECT_FALSE(out.config->ssh_accept_new_host_keys);
  out = Parse({"-H", "a:2", "--ssh-accept-new-host-keys", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_TRUE(out.config->ssh_accept_new_host_keys);
}

TEST(CliTest, TimelineAndCacheFlagsReachTheWorkers) {
  auto env = EnvOf({"--timeline-filename", "/tmp/t.json",
                    "--timeline-mark-cycles", "--cache-capacity", "0"});
  EXPECT_EQ(env["HOROVOD_TIMELINE"], "/tmp/t.json");
  EXPECT_EQ(env["HOROVOD_TIMELINE_MARK_CYCLES"], "1");
  EXPECT_EQ(env["HOROVOD_CACHE_CAPACITY"], "0");
  // horovodrun's --disable-cache is about its host-check cache, which
  // hvdrun does not have: accepted, the response cache stays as it is.
  env = EnvOf({"--disable-cache"});
  EXPECT_EQ(env.count("HOROVOD_CACHE_CAPACITY"), 0u);
  EXPECT_EQ(EnvOf({"--disable-cache", "--cache-capacity",
                   "10"})["HOROVOD_CACHE_CAPACITY"],
            "10");
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

// -H, hostfiles, discovery output and Slurm share one rule (host_slots.h).
TEST(CliTest, HostListsFollowTheOneHostRule) {
  struct Case {
    std::string text, why;
  };
  for (const Case& c : std::vector<Case>{
           {"a:2,a:1", "'a:1': host 'a' listed twice"},
           {"a,a:2", "listed twice"},
           {"-oProxyCommand=x",
            "host name '-oProxyCommand=x' starts with '-', which ssh would "
            "read as one of its options"},
           {"a,-x:2", "'-x:2': host name '-x' starts with '-'"},
           {"a:4097", "slots of 'a' must be a whole number in [1, 4096]"},
           {"a:0", "[1, 4096]"},
           {"a b", "not 'host' or 'host:slots'"},
           {"a:2:3", "slots of 'a'"}}) {
    auto hosts = ParseHostList(c.text);
    ASSERT_FALSE(hosts.ok()) << c.text;
    EXPECT_NE(hosts.status().message().find(c.why), std::string::npos)
        << hosts.status().message();
    EXPECT_EQ(hosts.status().message().rfind("-H/--hosts '", 0), 0u)
        << hosts.status().message();
  }
  auto ok = ParseHostList("node-1.example:4096,10.0.0.2,b_c:1");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[0].slots, 4096);
  EXPECT_EQ((*ok)[1].slots, 1);
  std::string path = ::testing::TempDir() + "/hosts_twice";
  std::ofstream(path) << "node1 slots=2\nnode1\n";
  auto twice = ParseHostfile(path);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find(path + ":2 'node1'"),
            std::string::npos)
      << twice.status().message();
  std::remove(path.c_str());
}

// horovodrun's single-dash spellings of several letters and its long
// aliases (CLI11 alone would read "-hostfile" as -h and print help).
TEST(CliTest, HorovodrunSpellingsAndAliases) {
  std::string path = ::testing::TempDir() + "/hosts_spelling";
  std::ofstream(path) << "a slots=2\nb slots=2\n";
  CliOutcome out = Parse({"-hostfile", path, "--gloo", "--min-num-proc", "1",
                          "--max-num-proc", "4", "-np", "2", "cmd"});
  ASSERT_TRUE(out.config);
  ASSERT_EQ(out.config->hosts.size(), 2u);
  EXPECT_EQ(out.config->hosts[1].host, "b");
  EXPECT_TRUE(out.config->elastic);
  EXPECT_EQ(out.config->min_np, 1);
  EXPECT_EQ(out.config->max_np, 4);
  EXPECT_EQ(out.config->command, std::vector<std::string>{"cmd"});
  std::remove(path.c_str());
}

// horovodrun's -prefix-timestamp is --prefix-output-with-timestamp; the
// log timestamp flags set hvdrun's own (and the workers') setting.
TEST(CliTest, TimestampFlags) {
  CliOutcome plain = Parse({"-np", "1", "cmd"});
  ASSERT_TRUE(plain.config);
  EXPECT_FALSE(plain.config->prefix_output_with_timestamp);
  EXPECT_FALSE(plain.config->log_hide_time.has_value());
  for (const char* flag :
       {"-prefix-timestamp", "--prefix-output-with-timestamp"}) {
    CliOutcome out = Parse({"-np", "1", flag, "cmd"});
    ASSERT_TRUE(out.config) << flag;
    EXPECT_TRUE(out.config->prefix_output_with_timestamp) << flag;
    EXPECT_EQ(out.config->command, std::vector<std::string>{"cmd"});
  }
  CliOutcome hidden = Parse({"-np", "1", "--log-without-timestamp", "cmd"});
  ASSERT_TRUE(hidden.config);
  EXPECT_EQ(hidden.config->log_hide_time, std::optional<bool>(true));
  CliOutcome shown = Parse(
      {"-np", "1", "--log-hide-timestamp", "--log-with-timestamp", "cmd"});
  ASSERT_TRUE(shown.config);
  EXPECT_EQ(shown.config->log_hide_time, std::optional<bool>(false));
}

TEST(CliTest, VersionAndCheckBuildPrintAndExit) {
  const common::BuildInfo info = common::GetBuildInfo();
  EXPECT_EQ(OutputOf({"--version"}), info.version + "\n");
  EXPECT_EQ(OutputOf({"-v"}), info.version + "\n");
  const std::string report = OutputOf({"-cb"});
  EXPECT_EQ(report, common::CheckBuildReport(info));
  EXPECT_EQ(OutputOf({"--check-build", "-np", "2", "cmd"}), report);
}

TEST(CliTest, CheckBuildReportMarksWhatIsBuilt) {
  common::BuildInfo info;
  info.version = "9.8.7";
  info.pytorch = true;
  info.nccl_version = 22807;
  const std::string report = common::CheckBuildReport(info);
  EXPECT_EQ(report.rfind("hvd v9.8.7:\n", 0), 0u) << report;
  for (const char* line : {"[X] PyTorch", "[ ] TensorFlow", "[X] Gloo",
                           "[ ] MPI", "[X] NCCL", "[ ] DDL", "[ ] CCL"}) {
    EXPECT_NE(report.find(std::string("    ") + line + "\n"), std::string::npos)
        << line << "\n"
        << report;
  }
  info.nccl_version = 0;
  EXPECT_NE(common::CheckBuildReport(info).find("[ ] NCCL"), std::string::npos);
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

// horovodrun's order: options in any order before the command.
TEST(CliTest, OptionsInAnyOrderBeforeTheCommand) {
  const std::vector<std::vector<std::string>> orders = {
      {"-H", "localhost:2", "-np", "2", "python", "train.py"},
      {"-np", "2", "-H", "localhost:2", "python", "train.py"},
      {"--verbose", "-H", "localhost:2", "--start-timeout", "7", "-np", "2",
       "python", "train.py"},
      {"-H", "localhost:2", "--cycle-time-ms", "2", "--verbose", "-np=2",
       "python", "train.py"},
      {"--hosts=localhost:2", "--num-proc=2", "python", "train.py"},
      {"-H", "localhost:2", "--num-proc", "2", "-p2222", "python", "train.py"},
      {"--fusion-threshold-mb", "8", "-H", "localhost:2", "-np", "2", "--",
       "python", "train.py"},
  };
  for (const auto& args : orders) {
    CliOutcome out = Parse(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    ASSERT_TRUE(out.config) << joined;
    EXPECT_EQ(out.config->num_proc, 2) << joined;
    ASSERT_EQ(out.config->hosts.size(), 1u) << joined;
    EXPECT_EQ(out.config->hosts[0].host, "localhost") << joined;
    EXPECT_EQ(out.config->command,
              (std::vector<std::string>{"python", "train.py"}))
        << joined;
  }
  CliOutcome out = Parse({"-H", "localhost:2", "--verbose", "--start-timeout",
                          "7", "-np", "2", "-p2222", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_TRUE(out.config->verbose);
  EXPECT_EQ(out.config->start_timeout, std::chrono::seconds(7));
  EXPECT_EQ(out.config->ssh_port, 2222);
}

TEST(CliTest, FlagsWithSeveralValuesInAnyOrder) {
  CliOutcome out =
      Parse({"-H", "a:2,b:2", "--blacklist-cooldown-range", "3", "8",
             "--min-np", "1", "-np", "2", "--reset-limit", "4", "cmd", "x"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(*out.config->cooldown_range, std::make_pair(3, 8));
  EXPECT_EQ(out.config->min_np, 1);
  EXPECT_EQ(out.config->num_proc, 2);
  EXPECT_EQ(*out.config->reset_limit, 4);
  EXPECT_EQ(out.config->command, (std::vector<std::string>{"cmd", "x"}));
}

// Everything from the first word that is no option (or after "--") is the
// command's, even words that look like hvdrun's options.
TEST(CliTest, OptionsAfterTheCommandBelongToTheCommand) {
  CliOutcome out = Parse({"-np", "2", "python", "train.py", "-H", "x:9",
                          "--verbose", "--start-timeout", "nan", "--", "-np"});
  ASSERT_TRUE(out.config);
  EXPECT_FALSE(out.config->verbose);
  EXPECT_EQ(out.config->start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(out.config->hosts[0].host, "localhost");
  EXPECT_EQ(
      out.config->command,
      (std::vector<std::string>{"python", "train.py", "-H", "x:9", "--verbose",
                                "--start-timeout", "nan", "--", "-np"}));
  // "--" lets the command start with a dash.
  out = Parse({"-np", "1", "--", "--weird-program", "-np", "3"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->num_proc, 1);
  EXPECT_EQ(out.config->command,
            (std::vector<std::string>{"--weird-program", "-np", "3"}));
  // A value that looks like an option is still the option's value.
  out = Parse({"--log-level", "debug", "-np", "1", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->log_level, "debug");
}

TEST(CliTest, LastOfARepeatedOptionWins) {
  auto env = EnvOf({"--network-interface", "a", "--network-interface", "b",
                    "--cycle-time-ms", "3", "--cycle-time-ms", "4"});
  EXPECT_EQ(env["HOROVOD_GLOO_IFACE"], "b");
  EXPECT_EQ(env["HOROVOD_CYCLE_TIME"], std::to_string(4.0));
  CliOutcome out = Parse({"-np", "1", "--blacklist-cooldown-range", "1", "2",
                          "--blacklist-cooldown-range", "3", "4",
                          "--reset-limit", "1", "--min-np", "1", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->cooldown_range, std::make_pair(3, 4));
}

TEST(CliTest, NegationsUndoTheirFlagWhicheverComesLast) {
  auto env = EnvOf({"--autotune", "--no-autotune"});
  EXPECT_EQ(env.count("HOROVOD_AUTOTUNE"), 0u);
  env = EnvOf({"--no-autotune", "--autotune"});
  EXPECT_EQ(env["HOROVOD_AUTOTUNE"], "1");
  env = EnvOf({"--timeline-filename", "t", "--timeline-mark-cycles",
               "--no-timeline-mark-cycles"});
  EXPECT_EQ(env.count("HOROVOD_TIMELINE_MARK_CYCLES"), 0u);
  env = EnvOf({"--no-stall-check", "--stall-check"});
  EXPECT_EQ(env.count("HOROVOD_STALL_CHECK_DISABLE"), 0u);
  env = EnvOf({"--stall-check", "--no-stall-check"});
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_DISABLE"], "1");
  env = EnvOf({"--log-without-timestamp"});
  EXPECT_EQ(env["HOROVOD_LOG_HIDE_TIME"], "1");
  env = EnvOf({"--log-hide-timestamp", "--log-with-timestamp"});
  EXPECT_EQ(env["HOROVOD_LOG_HIDE_TIME"], "0");
  env = EnvOf({"--no-log-hide-timestamp", "--log-hide-timestamp"});
  EXPECT_EQ(env["HOROVOD_LOG_HIDE_TIME"], "1");
  EXPECT_EQ(EnvOf({}).count("HOROVOD_LOG_HIDE_TIME"), 0u);
  env = EnvOf({"--no-hierarchical-allreduce", "--no-hierarchical-allgather"});
  EXPECT_EQ(env["HOROVOD_HIERARCHICAL_ALLREDUCE"], "0");
  EXPECT_EQ(env["HOROVOD_HIERARCHICAL_ALLGATHER"], "0");
  env = EnvOf({"--hierarchical-allreduce"});
  EXPECT_EQ(env["HOROVOD_HIERARCHICAL_ALLREDUCE"], "1");
  EXPECT_EQ(env.count("HOROVOD_HIERARCHICAL_ALLGATHER"), 0u);
  EXPECT_EQ(EnvOf({}).count("HOROVOD_HIERARCHICAL_ALLREDUCE"), 0u);
}

TEST(CliTest, HorovodLibraryFlagsReachTheWorkers) {
  auto env = EnvOf({"--thread-affinity", "0,3", "--tcp", "--autotune",
                    "--autotune-gaussian-process-noise", "0.5"});
  EXPECT_EQ(env["HOROVOD_THREAD_AFFINITY"], "0,3");
  EXPECT_EQ(env["NCCL_IB_DISABLE"], "1");
  EXPECT_EQ(std::stod(env["HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"]), 0.5);
  for (const char* bad : {"x", "1,", ",1", "-1", "1,,2", "70000", ""}) {
    CliOutcome out = Parse({"-np", "1", "--thread-affinity", bad, "cmd"});
    EXPECT_FALSE(out.config) << bad;
    EXPECT_EQ(out.exit_code, 2);
  }
  EXPECT_EQ(EnvOf({"--network-interfaces", "eth0"})["HOROVOD_GLOO_IFACE"],
            "eth0");
  // horovodrun's comma list: each host uses the first one it has.
  EXPECT_EQ(EnvOf({"--network-interfaces", "eth0,eth1"})["HOROVOD_GLOO_IFACE"],
            "eth0,eth1");
  for (const char* bad : {",eth0", "eth0,", "eth0,,eth1", "eth0, eth1"}) {
    CliOutcome out = Parse({"-np", "1", "--network-interfaces", bad, "cmd"});
    EXPECT_FALSE(out.config) << bad;
    EXPECT_EQ(out.exit_code, 2);
  }
}

TEST(CliTest, RefusedAndUnknownOptionsAreUsageErrors) {
  for (const char* option :
       {"--mpi", "--jsrun", "--mpi-args=x", "--binding-args=y",
        "--mpi-threads-disable", "--no-mpi-threads-disable",
        "--num-nccl-streams", "--bogus", "-x"}) {
    CliOutcome out = Parse({"-np", "1", option, "cmd"});
    EXPECT_FALSE(out.config) << option;
    EXPECT_EQ(out.exit_code, 2) << option;
  }
}

TEST(CliTest, UnambiguousPrefixesStandForTheirOption) {
  auto env = EnvOf({"--fusion-thr", "2"});  // argparse's abbreviations
  EXPECT_EQ(env["HOROVOD_FUSION_THRESHOLD"], std::to_string(2 << 20));
  EXPECT_FALSE(Parse({"-np", "1", "--autotune-", "cmd"}).config);  // several
}

// --help: every tuning flag names its default; a negated spelling carries
// no "{false}" (which read as "off by default" for flags that are on); the
// example runs a program Debian has.
TEST(CliTest, HelpNamesDefaultsAndNoFalseMarks) {
  ::testing::internal::CaptureStdout();
  CliOutcome out = Parse({"--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(help.find("{false}"), std::string::npos) << help;
  EXPECT_NE(help.find("--hierarchical-allreduce,--no-hierarchical-allreduce"),
            std::string::npos)
      << help;
  for (const char* text :
       {"HOROVOD_GLOO_TIMEOUT_SECONDS, default 30",
        "HOROVOD_FUSION_THRESHOLD, default 128",
        "HOROVOD_CYCLE_TIME, default 1", "HOROVOD_CACHE_CAPACITY, default 1024",
        "python3 train.py"}) {
    EXPECT_NE(help.find(text), std::string::npos) << text << "\n" << help;
  }
  EXPECT_EQ(help.find(" python train.py"), std::string::npos) << help;
}

// An ambiguous prefix names every option it begins; a word cut short is
// completed before any nearer typo (-n is -np, not -h).
TEST(CliTest, UnknownOptionsGetTheLikelyNameOrTheCandidates) {
  std::string err = ErrorOf({"-n", "2", "cmd"});
  EXPECT_NE(err.find("unknown option -n; did you mean -np?"), std::string::npos)
      << err;
  err = ErrorOf({"-np", "1", "--autotune-", "cmd"});
  EXPECT_NE(err.find("ambiguous option --autotune-: it begins"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--autotune-log-file"), std::string::npos) << err;
  EXPECT_NE(err.find("--autotune-warmup-samples"), std::string::npos) << err;
}

}  // namespace
}  // namespace hvd::launcher

namespace hvd::launcher::cli_test {
namespace {

TEST(CliTest, EtcdRendezvousOptionsAndTorchrunsSpellings) {
  for (const auto& spelling :
       {std::vector<std::string>{"--rendezvous-backend", "etcd",
                                 "--rendezvous-endpoint",
                                 "e1:2379,https://e2:2379", "--job-id", "j-1",
                                 "--job-secret-file", "/shared/j-1.secret"},
        std::vector<std::string>{"--rdzv-backend", "etcd", "--rdzv-endpoint",
                                 "e1:2379,https://e2:2379", "--rdzv-id", "j-1",
                                 "--job-secret-file", "/shared/j-1.secret"}}) {
    std::vector<std::string> args = spelling;
    args.insert(args.end(), {"-np", "2", "cmd"});
    CliOutcome out = Parse(args);
    ASSERT_TRUE(out.config) << spelling[0];
    EXPECT_EQ(out.config->rendezvous_backend, RendezvousBackend::kEtcd);
    EXPECT_EQ(out.config->rendezvous_endpoint, "e1:2379,https://e2:2379");
    EXPECT_EQ(out.config->job_id, "j-1");
    EXPECT_EQ(out.config->job_secret_file, "/shared/j-1.secret");
    EXPECT_EQ(out.config->adopt_grace.count(), 0);
  }
  CliOutcome adopting =
      Parse({"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
             "--adopt-grace-seconds", "45", "-np", "2", "cmd"});
  ASSERT_TRUE(adopting.config);
  EXPECT_EQ(adopting.config->adopt_grace.count(), 45000);
  EXPECT_FALSE(adopting.config->standby);
  EXPECT_EQ(adopting.config->leader_lease, kDefaultLeaderLease);
  CliOutcome leased =
      Parse({"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
             "--leader-lease-seconds", "12", "-np", "2", "cmd"});
  ASSERT_TRUE(leased.config);
  EXPECT_EQ(leased.config->leader_lease.count(), 12000);
  CliOutcome standby =
      Parse({"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
             "--standby", "--job-id", "j", "--job-secret-file", "/s", "-np",
             "2", "cmd"});
  ASSERT_TRUE(standby.config);
  EXPECT_TRUE(standby.config->standby);
  CliOutcome plain = Parse({"-np", "2", "cmd"});
  ASSERT_TRUE(plain.config);
  EXPECT_EQ(plain.config->rendezvous_backend, RendezvousBackend::kEmbedded);
  auto env = EnvOf({"--rendezvous-backend", "etcd", "--rendezvous-endpoint",
                    "e1:2379", "--job-id", "j-1"});
  EXPECT_EQ(env["HVD_RENDEZVOUS_BACKEND"], "etcd");
  EXPECT_EQ(env["HVD_ETCD_ENDPOINTS"], "e1:2379");
  EXPECT_EQ(env["HVD_ETCD_PREFIX"], "/hvd/jobs/j-1/");
  EXPECT_EQ(EnvOf({})["HVD_RENDEZVOUS_BACKEND"], "embedded");
  EXPECT_EQ(EnvOf({}).count("HVD_ETCD_PREFIX"), 0u);
}

TEST(CliTest, EtcdOptionsThatCannotWorkAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--rendezvous-backend", "etcd"},
       "--rendezvous-backend etcd needs --rendezvous-endpoint"},
      {{"--rendezvous-endpoint", "e1:2379"},
       "--rendezvous-endpoint names etcd's side of a job; it needs "
       "--rendezvous-backend etcd"},
      {{"--job-id", "j"}, "--job-id names etcd's side of a job"},
      {{"--job-secret-file", "/tmp/s"},
       "--job-secret-file names etcd's side of a job"},
      {{"--adopt-grace-seconds", "30"},
       "--adopt-grace-seconds names etcd's side of a job"},
      {{"--standby"}, "--standby names etcd's side of a job"},
      {{"--leader-lease-seconds", "5"},
       "--leader-lease-seconds names etcd's side of a job"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--leader-lease-seconds", "1"},
       "--leader-lease-seconds"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--standby", "--job-id", "j"},
       "--standby needs the job's --job-id and --job-secret-file"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--standby", "--job-secret-file", "/s"},
       "--standby needs the job's --job-id and --job-secret-file"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--adopt-grace-seconds", "3601"},
       "--adopt-grace-seconds"},
      {{"--rendezvous-backend", "zookeeper"}, "--rendezvous-backend"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:99999"},
       "--rendezvous-endpoint: etcd endpoint 'e1:99999'"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--job-id", "a/b"},
       "--job-id 'a/b': a job id is 1 to 128 letters"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--job-id", ".."},
       "not starting with '.'"},
      {{"--rendezvous-backend", "etcd", "--rendezvous-endpoint", "e1:2379",
        "--job-id", std::string(129, 'j')},
       "a job id is 1 to 128"}};
  for (const auto& [given, message] : cases) {
    std::vector<std::string> args = given;
    args.insert(args.end(), {"-np", "1", "cmd"});
    EXPECT_NE(ErrorOf(args).find(message), std::string::npos)
        << given[0] << " -> " << ErrorOf(args);
  }
}

}  // namespace
}  // namespace hvd::launcher::cli_test
