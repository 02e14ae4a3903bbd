#include "worker_env.h"

#include <gtest/gtest.h>

#include <map>

namespace hvd::launcher {
namespace {

std::map<std::string, std::string> AsMap(const EnvList& env) {
  return std::map<std::string, std::string>(env.begin(), env.end());
}

TEST(WorkerEnvTest, HorovodNamesAndKnobs) {
  SlotAssignment slot{"node2", 5, 8, 1, 4, 1, 2};
  LaunchConfig config;
  config.fusion_threshold_mb = 64;
  config.cycle_time_ms = 1.5;
  config.network_interface = "eth1";
  auto env = AsMap(WorkerEnvironment(slot, {"10.0.0.1", 4242, "s3"}, config));
  EXPECT_EQ(env["HOROVOD_RANK"], "5");
  EXPECT_EQ(env["HOROVOD_SIZE"], "8");
  EXPECT_EQ(env["HOROVOD_LOCAL_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "4");
  EXPECT_EQ(env["HOROVOD_CROSS_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
  EXPECT_EQ(env["HOROVOD_HOSTNAME"], "node2");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_PORT"], "4242");
  EXPECT_EQ(env["HVD_SECRET_KEY"], "s3");
  EXPECT_EQ(env["HOROVOD_FUSION_THRESHOLD"], std::to_string(64 << 20));
  EXPECT_EQ(env["HOROVOD_GLOO_IFACE"], "eth1");
  EXPECT_EQ(env.count("HOROVOD_CACHE_CAPACITY"), 0u);
}

TEST(WorkerEnvTest, SshCommandKeepsTheSecretOffTheCommandLine) {
  SlotAssignment slot{"node2", 0, 1, 0, 1, 0, 1};
  LaunchConfig config;
  config.ssh_port = 2222;
  config.ssh_identity_file = "/keys/id";
  config.command = {"python", "it's.py"};
  EnvList env = WorkerEnvironment(slot, {"10.0.0.1", 1, "topsecret"}, config);
  auto ssh = SshCommand(slot, env, config, "/work dir");
  std::string all;
  for (const auto& word : ssh) all += word + " ";
  EXPECT_EQ(all.find("topsecret"), std::string::npos) << all;
  EXPECT_NE(all.find("BatchMode=yes"), std::string::npos);
  EXPECT_NE(all.find("-p 2222"), std::string::npos);
  EXPECT_NE(all.find("-i /keys/id"), std::string::npos);
  EXPECT_EQ(ssh[ssh.size() - 2], "node2");
  const std::string& remote = ssh.back();
  EXPECT_EQ(remote.rfind("cd '/work dir' && IFS= read -r HVD_SECRET_KEY", 0),
            0u)
      << remote;
  EXPECT_NE(remote.find("'HOROVOD_RANK=0'"), std::string::npos);
  EXPECT_NE(remote.find("'it'\\''s.py'"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
