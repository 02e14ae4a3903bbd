#include "job/worker_env.h"

#include "remote/ssh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "hvd/common/worker_key.h"

namespace hvd::launcher {
namespace {

std::map<std::string, std::string> AsMap(const EnvList& env) {
  return std::map<std::string, std::string>(env.begin(), env.end());
}

TEST(WorkerEnvTest, HorovodNamesAndKnobs) {
  SlotAssignment slot{"node2", {5, 8, 1, 4, 1, 2}, {}};
  LaunchConfig config;
  config.fusion_threshold_mb = 64;
  config.cycle_time_ms = 1.5;
  config.network_interface = "eth1";
  auto env =
      AsMap(WorkerEnvironment(slot, 9, {"10.0.0.1", 4242, "s3", ""}, config));
  EXPECT_EQ(env["HOROVOD_RANK"], "5");
  EXPECT_EQ(env["HOROVOD_SIZE"], "8");
  EXPECT_EQ(env["HOROVOD_LOCAL_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "4");
  EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
  EXPECT_EQ(env["HOROVOD_HOSTNAME"], "node2");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_PORT"], "4242");
  // The process's id and its own key; the job secret stays with hvdrun.
  EXPECT_EQ(env["HVD_WORKER_ID"], "9");
  EXPECT_EQ(env["HVD_WORKER_KEY"], common::WorkerKey("s3", {9, "node2:1"}));
  EXPECT_EQ(env.count("HVD_SECRET_KEY"), 0u);
  EXPECT_EQ(env["HOROVOD_FUSION_THRESHOLD"], std::to_string(64 << 20));
  EXPECT_EQ(env["HOROVOD_GLOO_IFACE"], "eth1");
  EXPECT_EQ(env.count("HOROVOD_CACHE_CAPACITY"), 0u);
}

TEST(WorkerEnvTest, ElasticJobsPassTheElasticTimeoutInWholeSeconds) {
  SlotAssignment slot{"node2", {0, 1, 0, 1, 0, 1}, {}};
  LaunchConfig config;
  EXPECT_EQ(AsMap(WorkerEnvironment(slot, 1, {"a", 1, "s", ""}, config))
                .count("HOROVOD_ELASTIC_TIMEOUT"),
            0u);
  config.elastic = true;
  config.elastic_timeout = std::chrono::milliseconds(2500);
  EXPECT_EQ(AsMap(WorkerEnvironment(slot, 1, {"a", 1, "s", ""},
                                    config))["HOROVOD_ELASTIC_TIMEOUT"],
            "3");
}

TEST(WorkerEnvTest, TimelineAutotuneAndStallKnobs) {
  SlotAssignment slot{"node2", {0, 1, 0, 1, 0, 1}, {}};
  LaunchConfig config;
  auto env =
      AsMap(WorkerEnvironment(slot, 1, {"10.0.0.1", 1, "s", ""}, config));
  for (const char* name :
       {"HOROVOD_TIMELINE_MARK_CYCLES", "HOROVOD_AUTOTUNE",
        "HOROVOD_AUTOTUNE_LOG", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
        "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
        "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "HOROVOD_STALL_CHECK_DISABLE",
        "HOROVOD_STALL_CHECK_TIME_SECONDS",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"}) {
    EXPECT_EQ(env.count(name), 0u) << name << " set by default";
  }
  config.timeline_mark_cycles = true;
  config.autotune = true;
  config.autotune_log_file = "tune.csv";
  config.autotune_warmup_samples = 0;
  config.autotune_steps_per_sample = 4;
  config.autotune_max_samples = 7;
  config.stall_check_disable = true;
  config.stall_check_warning_seconds = 9;
  config.stall_check_shutdown_seconds = 0;
  env = AsMap(WorkerEnvironment(slot, 1, {"10.0.0.1", 1, "s", ""}, config));
  EXPECT_EQ(env["HOROVOD_TIMELINE_MARK_CYCLES"], "1");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE"], "1");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_LOG"], "tune.csv");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_WARMUP_SAMPLES"], "0");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"], "4");
  EXPECT_EQ(env["HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"], "7");
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_DISABLE"], "1");
  EXPECT_EQ(env["HOROVOD_STALL_CHECK_TIME_SECONDS"], "9");
  EXPECT_EQ(env["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"], "0");
}

TEST(WorkerEnvTest, ExportedVariablesComeLastAndNeverOverrideHvdrunsOwn) {
  SlotAssignment slot{"node2", {3, 4, 0, 1, 0, 1}, {}};
  LaunchConfig config;
  config.extra_env = {{"OMP_NUM_THREADS", "2"}, {"HOROVOD_RANK", "9"}};
  EnvList env = WorkerEnvironment(slot, 1, {"10.0.0.1", 1, "s", ""}, config);
  EXPECT_EQ(env.back(),
            (std::pair<std::string, std::string>{"OMP_NUM_THREADS", "2"}));
  EXPECT_EQ(AsMap(env)["HOROVOD_RANK"], "3");
  EXPECT_EQ(
      std::count_if(env.begin(), env.end(),
                    [](const auto& e) { return e.first == "HOROVOD_RANK"; }),
      1);
}

TEST(WorkerEnvTest, SshArgsCarryPortIdentityAndHostLast) {
  LaunchConfig config;
  config.ssh_port = 2222;
  config.ssh_identity_file = "/keys/id";
  auto ssh = SshArgs("node2", config);
  std::string all;
  for (const auto& word : ssh) all += word + " ";
  EXPECT_NE(all.find("BatchMode=yes"), std::string::npos);
  EXPECT_NE(all.find("-p 2222"), std::string::npos);
  EXPECT_NE(all.find("-i /keys/id"), std::string::npos);
  EXPECT_EQ(ssh.back(), "node2");
}

// A host name is ssh's destination whatever it looks like: one that starts
// with '-' would otherwise be an option (-oProxyCommand runs a command).
TEST(WorkerEnvTest, SshArgsEndTheOptionsBeforeTheHost) {
  LaunchConfig config;
  auto ssh = SshArgs("-oProxyCommand=touch /tmp/x", config);
  ASSERT_GE(ssh.size(), 2u);
  EXPECT_EQ(ssh[ssh.size() - 2], "--");
  EXPECT_EQ(ssh.back(), "-oProxyCommand=touch /tmp/x");
}

// Host keys are the user's ssh configuration's to check; the flag lets
// ssh record a host it has never seen, nothing more.
TEST(WorkerEnvTest, SshArgsLeaveHostKeyCheckingToTheUsersSsh) {
  LaunchConfig config;
  std::string all;
  for (const auto& word : SshArgs("node2", config)) all += word + " ";
  EXPECT_EQ(all.find("StrictHostKeyChecking"), std::string::npos) << all;
  EXPECT_EQ(all.find("UserKnownHostsFile"), std::string::npos) << all;
  config.ssh_accept_new_host_keys = true;
  all.clear();
  for (const auto& word : SshArgs("node2", config)) all += word + " ";
  EXPECT_NE(all.find("-o StrictHostKeyChecking=accept-new "), std::string::npos)
      << all;
}

// The value of every "-o Name=value" in an ssh argv.
std::map<std::string, std::string> SshOptions(
    const std::vector<std::string>& ssh) {
  std::map<std::string, std::string> options;
  for (size_t i = 0; i + 1 < ssh.size(); ++i) {
    if (ssh[i] != "-o") continue;
    const std::string& option = ssh[i + 1];
    size_t eq = option.find('=');
    EXPECT_NE(eq, std::string::npos) << option;
    options[option.substr(0, eq)] = option.substr(eq + 1);
  }
  return options;
}

TEST(WorkerEnvTest, SshCannotHangOnAnUnreachableOrSilentHost) {
  LaunchConfig config;
  config.command = {"python", "train.py"};
  config.start_timeout = std::chrono::seconds(45);
  auto ssh = SshArgs("node2", config);
  ASSERT_EQ(ssh.front(), "ssh");
  auto options = SshOptions(ssh);
  EXPECT_EQ(options["BatchMode"], "yes");
  // Connecting is bounded by the start timeout...
  EXPECT_EQ(options["ConnectTimeout"], "45");
  // ...and a connected link by its keep-alives.
  EXPECT_EQ(options["ServerAliveInterval"], "1");
  EXPECT_EQ(options["ServerAliveCountMax"], "2");
  config.start_timeout = std::chrono::seconds(7);
  EXPECT_EQ(SshOptions(SshArgs("node2", config))["ConnectTimeout"], "7");
}

}  // namespace
TEST(WorkerEnvTest, TheKeyNamesTheSlotItsIndexNamesAndNeverTheSecret) {
  // A warm joiner's slot keeps its index while its local rank moves.
  SlotAssignment slot{"n1", {0, 2, 0, 1, 0, 2}, 3};
  LaunchConfig config;
  const DriverEndpoint driver{"a", 1, "s", "public"};
  auto env = AsMap(WorkerEnvironment(slot, 4, driver, config));
  EXPECT_EQ(env["HVD_WORKER_KEY"], common::WorkerKey("s", {4, "n1:3"}));
  EXPECT_NE(env["HVD_WORKER_KEY"], common::WorkerKey("s", {4, "n1:0"}));
  EXPECT_NE(env["HVD_WORKER_KEY"], common::WorkerKey("s", {5, "n1:3"}));
  EXPECT_EQ(env.count("HVD_JOB_PUBLIC_KEY"), 0u);
  // With etcd: the public key checks hvdrun's address there; a static
  // job's workers seal with the generations key.
  config.rendezvous_backend = RendezvousBackend::kEtcd;
  config.job_id = "j";
  env = AsMap(WorkerEnvironment(slot, 4, driver, config));
  EXPECT_EQ(env.count("HVD_SECRET_KEY"), 0u);
  EXPECT_EQ(env["HVD_JOB_PUBLIC_KEY"], "public");
  EXPECT_EQ(env["HVD_GENERATIONS_KEY"], common::GenerationsKey("s"));
  EXPECT_NE(env["HVD_GENERATIONS_KEY"], "s");
  // An elastic worker gets each generation's key when it checks in.
  config.elastic = true;
  env = AsMap(WorkerEnvironment(slot, 4, driver, config));
  EXPECT_EQ(env.count("HVD_SECRET_KEY"), 0u);
  EXPECT_EQ(env.count("HVD_GENERATIONS_KEY"), 0u);
}

}  // namespace hvd::launcher
