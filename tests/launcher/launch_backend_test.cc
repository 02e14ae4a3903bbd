// The launch back-ends behind --launcher: where a host's processes start
// and the command line that reaches the others (the host check's fake ssh
// and srun run them: host_check_run_test.cc; the bed and the Slurm tests
// run real ones).
#include "remote/launch_backend.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

const std::vector<std::string> kWords = {"/opt/hvd/bin/hvdrun", "--flag",
                                         "two words"};

LaunchConfig ConfigFor(Launcher launcher) {
  LaunchConfig config;
  config.launcher = launcher;
  return config;
}

TEST(LaunchBackendTest, LocalRunsThisMachineAndRefusesEveryOtherHost) {
  const LaunchConfig config = ConfigFor(Launcher::kLocal);
  auto backend = MakeLaunchBackend(config);
  EXPECT_TRUE(backend->RunsHere("localhost"));
  EXPECT_TRUE(backend->RunsHere("127.0.0.1"));
  EXPECT_FALSE(backend->RunsHere("node7"));
  auto command = backend->Command("node7", kWords, "step");
  ASSERT_FALSE(command.ok());
  EXPECT_NE(command.status().message().find(
                "host node7 is not this machine, and --launcher local"),
            std::string::npos)
      << command.status().message();
}

TEST(LaunchBackendTest, SshRunsThisMachineHereAndExecsTheQuotedWordsElsewhere) {
  LaunchConfig config = ConfigFor(Launcher::kSsh);
  config.ssh_port = 2222;
  auto backend = MakeLaunchBackend(config);
  EXPECT_STREQ(backend->tool(), "ssh");
  EXPECT_TRUE(backend->RunsHere("localhost"));
  EXPECT_FALSE(backend->RunsHere("node7"));
  auto command = backend->Command("node7", kWords, "step");
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  ASSERT_GE(command->size(), 3u);
  EXPECT_EQ(command->front(), "ssh");
  EXPECT_EQ((*command)[command->size() - 2], "node7");
  // Every word quoted, so that the remote shell splits nothing.
  EXPECT_EQ(command->back(), "exec '/opt/hvd/bin/hvdrun' '--flag' 'two words'");
}

TEST(LaunchBackendTest, SlurmRunsEveryHostAsAStepAndNeedsAnAllocation) {
  const LaunchConfig config = ConfigFor(Launcher::kSlurm);
  auto backend = MakeLaunchBackend(config);
  EXPECT_STREQ(backend->tool(), "srun");
  // This node's processes are steps too, so that sacct lists them.
  EXPECT_FALSE(backend->RunsHere("localhost"));
  auto command = backend->Command("node7", kWords, "step");
  ASSERT_FALSE(command.ok());
  EXPECT_NE(command.status().message().find("needs a Slurm allocation"),
            std::string::npos)
      << command.status().message();
}

}  // namespace
}  // namespace hvd::launcher
