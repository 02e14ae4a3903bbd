// Real processes run the runtime end to end without Python: each rank
// drives its Runtime from two threads and goes through a reset
// (collectives_worker.cc). Run in every build; in the TSan stage of
// scripts/test.sh it is the test that covers the runtime's threads.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "hvd/rendezvous/server.h"

namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "0ddba11c0ffee";

// Starts the workers and reaps them; kills whatever still runs when the
// test ends.
class Ranks {
 public:
  ~Ranks() {
    for (pid_t pid : pids_) {
      // Only live children: kill() of 0 or -1 would hit the test's process
      // group or every process it may signal.
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  void Spawn(std::vector<std::string> args) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("HVD_SECRET_KEY", kSecret, 1);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    pids_.push_back(pid);
  }
  // Exit codes in spawn order; -1 for a rank killed by a signal or still
  // running at the deadline.
  std::vector<int> Wait(std::chrono::seconds limit) {
    std::vector<int> codes(pids_.size(), -1);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    size_t left = pids_.size();
    while (left > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) {
        std::this_thread::sleep_for(10ms);  // reaping, not synchronising
        continue;
      }
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (pids_[i] != pid) continue;
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pids_[i] = 0;  // reaped
        --left;
      }
    }
    return codes;
  }

 private:
  std::vector<pid_t> pids_;
};

TEST(RuntimeThreadsTest, ThreeRanksTwoThreadsEachAndAReset) {
  hvd::rendezvous::ServerOptions options;
  options.secret = kSecret;
  auto server = hvd::rendezvous::RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string timeline =
      ::testing::TempDir() + "runtime_threads_test_timeline.json";
  std::remove(timeline.c_str());
  constexpr int kSize = 3;
  Ranks ranks;
  for (int rank = 0; rank < kSize; ++rank) {
    ranks.Spawn({HVD_COLLECTIVES_WORKER, std::to_string((*server)->port()),
                 std::to_string(rank), std::to_string(kSize), timeline});
  }
  EXPECT_EQ(ranks.Wait(100s), std::vector<int>(kSize, 0));
  EXPECT_EQ(access(timeline.c_str(), R_OK), 0) << "rank 0 wrote no timeline";
  std::remove(timeline.c_str());
}

}  // namespace
