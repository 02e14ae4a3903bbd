#include "hvd/runtime/config.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <tuple>

namespace hvd::runtime {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"HOROVOD_RANK",
                             "HOROVOD_SIZE",
                             "HOROVOD_LOCAL_RANK",
                             "HOROVOD_LOCAL_SIZE",
                             "HOROVOD_CROSS_RANK",
                             "HOROVOD_CROSS_SIZE",
                             "HOROVOD_HOSTNAME",
                             "HOROVOD_GLOO_RENDEZVOUS_ADDR",
                             "HOROVOD_GLOO_RENDEZVOUS_PORT",
                             "HVD_SECRET_KEY",
                             "HVD_WORKER_KEY",
                             "HVD_GENERATIONS_KEY",
                             "HVD_JOB_PUBLIC_KEY",
                             "HVD_WORKER_ID",
                             "HVD_KEEP_WORKER_KEY",
                             "HOROVOD_START_TIMEOUT",
                             "HOROVOD_GLOO_TIMEOUT_SECONDS",
                             "HOROVOD_TIMELINE",
                             "HOROVOD_THREAD_AFFINITY",
                             "HVD_REPORT_INTERVAL_SECONDS",
                             "HOROVOD_ELASTIC_TIMEOUT",
                             "HVD_RENDEZVOUS_BACKEND",
                             "HVD_ETCD_ENDPOINTS",
                             "HVD_ETCD_PREFIX"}) {
      unsetenv(name);
    }
  }
  void SetWorker() {
    setenv("HOROVOD_RANK", "3", 1);
    setenv("HOROVOD_SIZE", "4", 1);
    setenv("HOROVOD_LOCAL_RANK", "1", 1);
    setenv("HOROVOD_LOCAL_SIZE", "2", 1);
    setenv("HOROVOD_CROSS_RANK", "1", 1);
    setenv("HOROVOD_CROSS_SIZE", "2", 1);
    setenv("HOROVOD_HOSTNAME", "127.0.0.2", 1);
    setenv("HOROVOD_GLOO_RENDEZVOUS_ADDR", "127.0.0.1", 1);
    setenv("HOROVOD_GLOO_RENDEZVOUS_PORT", "4000", 1);
    setenv("HVD_WORKER_KEY", "abc", 1);
    setenv("HVD_WORKER_ID", "5", 1);
  }
};

TEST_F(ConfigTest, DynamicTimelineMeansNoFileAtInit) {
  setenv("HOROVOD_TIMELINE", "DYNAMIC", 1);
  auto config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->timeline, "");
  setenv("HOROVOD_TIMELINE", "/tmp/trace.json", 1);
  config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->timeline, "/tmp/trace.json");
  unsetenv("HOROVOD_TIMELINE");
}

TEST_F(ConfigTest, ReportIntervalDefaultsToOneSecondAndZeroTurnsItOff) {
  auto config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->report_interval, std::chrono::milliseconds(1000));
  setenv("HVD_REPORT_INTERVAL_SECONDS", "0.25", 1);
  config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->report_interval, std::chrono::milliseconds(250));
  setenv("HVD_REPORT_INTERVAL_SECONDS", "0", 1);
  config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->report_interval, std::chrono::milliseconds(0));
  setenv("HVD_REPORT_INTERVAL_SECONDS", "often", 1);
  config = RuntimeConfig::FromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("HVD_REPORT_INTERVAL_SECONDS"),
            std::string::npos);
  unsetenv("HVD_REPORT_INTERVAL_SECONDS");
}

TEST(ThreadAffinityTest, ParsesOneCorePerLocalRank) {
  auto cores = ParseThreadAffinity("0,4,65535");
  ASSERT_TRUE(cores.ok()) << cores.status().ToString();
  EXPECT_EQ(*cores, (std::vector<int>{0, 4, 65535}));
  for (const char* bad : {"", ",", "1,", ",1", "0,,1", "-1", "+1", " 1", "1 ",
                          "a", "1.5", "65536", "99999999999999999999"}) {
    auto parsed = ParseThreadAffinity(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_NE(parsed.status().message().find("HOROVOD_THREAD_AFFINITY"),
              std::string::npos)
        << parsed.status().ToString();
  }
}

TEST_F(ConfigTest, TooFewAffinityCoresForTheLocalRanksIsAnError) {
  SetWorker();  // local size 2
  setenv("HOROVOD_THREAD_AFFINITY", "3", 1);
  auto config = RuntimeConfig::FromEnv();
  unsetenv("HOROVOD_THREAD_AFFINITY");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("one core per local rank"),
            std::string::npos)
      << config.status().ToString();
}

TEST_F(ConfigTest, AloneWithoutLauncher) {
  auto config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->layout.rank, 0);
  EXPECT_EQ(config->layout.size, 1);
}

TEST_F(ConfigTest, ReadsTheLaunchersVariables) {
  SetWorker();
  setenv("HOROVOD_GLOO_TIMEOUT_SECONDS", "7", 1);
  auto config = RuntimeConfig::FromEnv();
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->layout.rank, 3);
  EXPECT_EQ(config->layout.local_size, 2);
  EXPECT_EQ(config->layout.cross_rank, 1);
  EXPECT_EQ(config->hostname, "127.0.0.2");
  EXPECT_EQ(config->rendezvous_port, 4000);
  EXPECT_EQ(config->gloo_timeout, std::chrono::seconds(7));
  EXPECT_EQ(config->worker_key, "abc");
  EXPECT_EQ(config->identity(), (common::WorkerIdentity{5, "127.0.0.2:1"}));
  EXPECT_TRUE(config->generations_key.empty()) << "only with etcd";
  EXPECT_FALSE(config->EtcdSealKey(0).ok());
}

TEST_F(ConfigTest, TheWorkersKeyLeavesTheEnvironmentAndStaysWithTheRuntime) {
  SetWorker();
  auto first = RuntimeConfig::FromEnv();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(getenv("HVD_WORKER_KEY"), nullptr)
      << "programs the user's code starts must not inherit it";
  // An elastic reset reads the configuration again.
  auto again = RuntimeConfig::FromEnv();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->worker_key, "abc");
  // Kept where the user asks for it.
  setenv("HVD_WORKER_KEY", "def", 1);
  setenv("HVD_KEEP_WORKER_KEY", "1", 1);
  auto kept = RuntimeConfig::FromEnv();
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->worker_key, "def");
  ASSERT_NE(getenv("HVD_WORKER_KEY"), nullptr);
  EXPECT_STREQ(getenv("HVD_WORKER_KEY"), "def");
}

TEST_F(ConfigTest, RejectsInconsistentOrMissingValues) {
  SetWorker();
  setenv("HOROVOD_RANK", "4", 1);
  auto config = RuntimeConfig::FromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("HOROVOD_RANK=4"),
            std::string::npos);
  SetWorker();
  unsetenv("HOROVOD_LOCAL_SIZE");
  config = RuntimeConfig::FromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("HOROVOD_LOCAL_SIZE"),
            std::string::npos);
  SetWorker();
  setenv("HOROVOD_START_TIMEOUT", "soon", 1);
  EXPECT_FALSE(RuntimeConfig::FromEnv().ok());
  SetWorker();
  unsetenv("HOROVOD_START_TIMEOUT");
  unsetenv("HVD_WORKER_ID");
  config = RuntimeConfig::FromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("HVD_WORKER_ID"), std::string::npos);
}

TEST_F(ConfigTest, TheElasticTimeoutAndTheRendezvousBackend) {
  SetWorker();
  auto plain = RuntimeConfig::FromEnv();
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->elastic_timeout, common::kDefaultElasticTimeout);
  EXPECT_FALSE(plain->etcd.has_value());
  setenv("HOROVOD_ELASTIC_TIMEOUT", "6", 1);
  setenv("HVD_RENDEZVOUS_BACKEND", "etcd", 1);
  setenv("HVD_ETCD_ENDPOINTS", "e1:2379,e2:2379", 1);
  setenv("HVD_ETCD_PREFIX", "/hvd/jobs/j/", 1);
  setenv("HVD_JOB_PUBLIC_KEY", "p", 1);
  auto without = RuntimeConfig::FromEnv();
  ASSERT_FALSE(without.ok()) << "a static worker seals with it";
  EXPECT_NE(without.status().message().find("HVD_GENERATIONS_KEY"),
            std::string::npos)
      << without.status().message();
  setenv("HVD_GENERATIONS_KEY", "gk", 1);
  auto etcd = RuntimeConfig::FromEnv();
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  EXPECT_EQ(etcd->elastic_timeout, std::chrono::seconds(6));
  ASSERT_TRUE(etcd->etcd.has_value());
  EXPECT_EQ(etcd->etcd->endpoints.size(), 2u);
  EXPECT_EQ(etcd->etcd_prefix, "/hvd/jobs/j/");
  EXPECT_EQ(etcd->job_public_key, "p");
  EXPECT_EQ(getenv("HVD_GENERATIONS_KEY"), nullptr) << "taken, as the key is";
  // A static worker is a member of every generation it starts.
  EXPECT_EQ(*etcd->EtcdSealKey(3), common::GenerationKey("gk", 3));
  EXPECT_NE(*etcd->EtcdSealKey(3), *etcd->EtcdSealKey(4));
  for (auto [name, value, named] :
       {std::tuple{"HOROVOD_ELASTIC_TIMEOUT", "later", "HOROVOD_ELASTIC"},
        std::tuple{"HVD_RENDEZVOUS_BACKEND", "zookeeper", "neither embedded"},
        std::tuple{"HVD_ETCD_PREFIX", "", "needs HVD_ETCD_PREFIX"},
        std::tuple{"HVD_JOB_PUBLIC_KEY", "", "HVD_JOB_PUBLIC_KEY"},
        std::tuple{"HVD_ETCD_ENDPOINTS", "e1:0", "HVD_ETCD_ENDPOINTS"}}) {
    SCOPED_TRACE(name);
    const char* before = getenv(name);
    const std::string kept = before ? before : "";
    setenv(name, value, 1);
    auto refused = RuntimeConfig::FromEnv();
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(named), std::string::npos)
        << refused.status().message();
    setenv(name, kept.c_str(), 1);
  }
}

// An elastic worker holds the key of the generation it joined, and no
// other (its check-in answer brought it).
TEST(EtcdSealKeyTest, AnElasticWorkerSealsOnlyForTheGenerationItJoined) {
  RuntimeConfig config;
  config.generation_key = "k5";
  config.generation_key_of = 5;
  EXPECT_EQ(*config.EtcdSealKey(5), "k5");
  auto other = config.EtcdSealKey(6);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), common::Code::kPermissionDenied);
  EXPECT_NE(other.status().message().find("generation 6"), std::string::npos);
}

}  // namespace
}  // namespace hvd::runtime
