// RunRemoteHostCheck with a fake ssh on PATH: the command it runs, and each
// way a check ends (answer, hvdrun missing, ssh's failure, a hang, a
// cancel). No network: the fake ssh runs the remote command with sh.
#include "remote/host_check_run.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "policy/host_check.h"

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;

class RunRemoteHostCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvd-host-check-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // The fake ssh: records its arguments, then acts by host name (the
    // word before the remote command).
    Write("ssh", "echo \"$@\" > " + dir_ +
                     "/ssh.args\n"
                     "for last; do :; done\n"
                     "eval host=\\${$(($# - 1))}\n"
                     "case $host in\n"
                     "  refused) echo 'ssh: connect to host refused port 22: "
                     "Connection refused' >&2; exit 255 ;;\n"
                     "  hang) exec sleep 60 ;;\n"
                     "  *) exec sh -c \"$last\" ;;\n"
                     "esac\n");
    Write("hvdrun",
          "[ \"$1\" = --hvd-internal-host-check ] || exit 2\n"
          "printf 'motd\\nhvd-host-check 1\\nlo 127.0.0.1\\neth0 "
          "10.0.0.5\\n'\n");
    old_path_ = getenv("PATH");
    setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
    config_.start_timeout = 1s;
    config_.ssh_port = 2222;
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    std::string command = "rm -rf " + dir_;
    EXPECT_EQ(system(command.c_str()), 0);
  }
  void Write(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  }
  std::string SshArgsSeen() {
    std::stringstream text;
    text << std::ifstream(dir_ + "/ssh.args").rdbuf();
    return text.str();
  }

  std::string dir_, old_path_;
  LaunchConfig config_;
};

TEST_F(RunRemoteHostCheckTest, AnAnswerGivesTheInterfaces) {
  auto interfaces = RunRemoteHostCheck("node1", dir_ + "/hvdrun", config_, -1);
  ASSERT_TRUE(interfaces.ok()) << interfaces.status().message();
  EXPECT_EQ(*interfaces, (std::vector<NetworkInterface>{{"lo", "127.0.0.1"},
                                                        {"eth0", "10.0.0.5"}}));
  // ssh as the workers get it (BatchMode, -p, ConnectTimeout), then the
  // host and the remote command.
  std::string args = SshArgsSeen();
  for (const std::string& word :
       {std::string("BatchMode=yes"), std::string("ConnectTimeout=1"),
        std::string("-p 2222"),
        "node1 exec '" + dir_ + "/hvdrun' '--hvd-internal-host-check'"}) {
    EXPECT_NE(args.find(word), std::string::npos) << word << " in " << args;
  }
}

// Under --launcher slurm the check is a step of the allocation on that
// node: the fake srun records its options and runs the words after them.
TEST_F(RunRemoteHostCheckTest, UnderSlurmTheCheckIsAStepOfTheJob) {
  Write("srun", "echo \"$@\" > " + dir_ +
                    "/srun.args\n"
                    "while [ \"${1#--}\" != \"$1\" ]; do shift; done\n"
                    "exec \"$@\"\n");
  config_.launcher = Launcher::kSlurm;
  config_.slurm = SlurmAllocation{"42", {{"node1", 2}}, std::nullopt};
  auto interfaces = RunRemoteHostCheck("node1", dir_ + "/hvdrun", config_, -1);
  ASSERT_TRUE(interfaces.ok()) << interfaces.status().message();
  EXPECT_EQ(interfaces->size(), 2u);
  std::stringstream text;
  text << std::ifstream(dir_ + "/srun.args").rdbuf();
  for (const std::string& word :
       {std::string("--jobid=42 "), std::string("--nodelist=node1 "),
        std::string("--ntasks=1 "), std::string("--overlap "),
        std::string("--job-name=hvd-host-check "),
        dir_ + "/hvdrun --hvd-internal-host-check"}) {
    EXPECT_NE(text.str().find(word), std::string::npos)
        << word << " in " << text.str();
  }
}

TEST_F(RunRemoteHostCheckTest, HvdrunMissingThereIsNamed) {
  auto interfaces =
      RunRemoteHostCheck("node1", "/nonexistent/bin/hvdrun", config_, -1);
  ASSERT_FALSE(interfaces.ok());
  EXPECT_EQ(interfaces.status().message(),
            "hvdrun is not at /nonexistent/bin/hvdrun on host node1: install "
            "hvd at the same path on every host (a shared home does that)");
}

TEST_F(RunRemoteHostCheckTest, SshsFailureIsQuoted) {
  auto interfaces =
      RunRemoteHostCheck("refused", dir_ + "/hvdrun", config_, -1);
  ASSERT_FALSE(interfaces.ok());
  EXPECT_EQ(interfaces.status().message(),
            "cannot reach host refused over ssh: ssh: connect to host refused "
            "port 22: Connection refused");
}

TEST_F(RunRemoteHostCheckTest, AHungSshIsKilledAfterTheStartTimeout) {
  auto started = std::chrono::steady_clock::now();
  auto interfaces = RunRemoteHostCheck("hang", dir_ + "/hvdrun", config_, -1);
  auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(interfaces.ok());
  EXPECT_EQ(interfaces.status().code(), common::Code::kTimeout);
  EXPECT_GE(took, config_.start_timeout + kHostCheckKillMargin);
  EXPECT_LT(took, config_.start_timeout + kHostCheckKillMargin + 2s);
}

TEST_F(RunRemoteHostCheckTest, ACancelEndsItAtOnce) {
  int cancel = eventfd(1, EFD_CLOEXEC);  // already readable
  ASSERT_GE(cancel, 0);
  auto started = std::chrono::steady_clock::now();
  auto interfaces =
      RunRemoteHostCheck("hang", dir_ + "/hvdrun", config_, cancel);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  ASSERT_FALSE(interfaces.ok());
  EXPECT_EQ(interfaces.status().code(), common::Code::kAborted);
  close(cancel);
}

}  // namespace
}  // namespace hvd::launcher
