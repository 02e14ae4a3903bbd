// Real processes run the runtime end to end without Python: each rank
// drives its Runtime from two threads and goes through a reset
// (collectives_worker.cc). Run in every build; in the TSan stage of
// scripts/test.sh it is the test that covers the runtime's threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "child_processes.h"
#include "hvd/rendezvous/server.h"

namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "0ddba11c0ffee";

TEST(RuntimeThreadsTest, ThreeRanksTwoThreadsEachAndAReset) {
  hvd::rendezvous::ServerOptions options;
  options.secret = kSecret;
  auto server = hvd::rendezvous::RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string timeline =
      ::testing::TempDir() + "runtime_threads_test_timeline.json";
  std::remove(timeline.c_str());
  constexpr int kSize = 3;
  hvd::testing::ChildProcesses ranks;
  for (int rank = 0; rank < kSize; ++rank) {
    ranks.Spawn({HVD_COLLECTIVES_WORKER, std::to_string((*server)->port()),
                 std::to_string(rank), std::to_string(kSize), timeline},
                kSecret);
  }
  EXPECT_EQ(ranks.Wait(100s), std::vector<int>(kSize, 0));
  EXPECT_EQ(access(timeline.c_str(), R_OK), 0) << "rank 0 wrote no timeline";
  std::remove(timeline.c_str());
}

}  // namespace
