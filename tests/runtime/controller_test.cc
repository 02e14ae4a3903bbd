// The Controller with its ranks as threads on the in-process control plane:
// every rank runs the same responses in the same order, with the response
// cache on and off; after the first cycle a steady loop runs from the cache
// without coordinator rounds; a request that changed fails on every rank;
// a shutdown is agreed; a rank that stops answering or dies is a bounded
// error on the others. The coordinator's rules are coordinator_test.cc's,
// the cache's own bookkeeping runtime_parts_test.cc's.
#include "negotiation/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "in_process_control_plane.h"
#include "rank_script.h"

namespace hvd::runtime {
namespace {

using common::Code;
using common::Status;
using namespace std::chrono_literals;

ControllerOptions Options(size_t cache_capacity = 1024) {
  ControllerOptions options;
  options.cache_capacity = cache_capacity;
  options.stall_check = false;
  return options;
}

// One rank's cycles (CycleLog) and its negotiation counts at the end.
struct RankLog : CycleLog {
  NegotiationStats stats;
};

// Runs every rank's steps (script[rank][cycle]) on its own thread, each
// with its own Controller.
std::vector<RankLog> RunRanks(const std::vector<std::vector<Step>>& script,
                              const ControllerOptions& options = Options(),
                              std::chrono::milliseconds timeout = 30s) {
  const int size = static_cast<int>(script.size());
  auto hub = std::make_shared<InProcessHub>(size, timeout);
  std::vector<RankLog> logs(size);
  OnEveryRank(size, [&](int rank) {
    Controller controller(std::make_unique<InProcessControlPlane>(hub, rank),
                          Ranks(size), options);
    Play(
        *hub, rank, script[rank],
        [&](const RequestList& list) {
          return controller.Cycle(list.requests, list.shutdown);
        },
        &logs[rank]);
    logs[rank].stats = controller.stats();
  });
  return logs;
}

class ControllerAgreementTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ControllerAgreementTest, EveryRankRunsTheSameResponsesInOneOrder) {
  const bool cache = GetParam() > 0;
  const auto a = Allreduce("a"), b = Allreduce("b");
  const auto logs = RunRanks(
      {
          {Send({a, b}), Send({}), Send({b, a})},
          {Send({b, a}), Send({}), Send({a, b})},
          {Send({a}), Send({b}), Send({a, b})},
          {Send({b, a}), Send({}), Send({a, b})},
      },
      Options(GetParam()));
  const std::vector<std::string> expected = {"a:run;", "b:run;",
                                             "a:run;b:run;"};
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(summaries[rank], expected) << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.cycles, 3);
    // With the cache, the third cycle runs from it.
    EXPECT_EQ(logs[rank].stats.coordinator_rounds, cache ? 2 : 3);
    EXPECT_EQ(logs[rank].stats.cache_hits, cache ? 2 : 0);
  }
}

INSTANTIATE_TEST_SUITE_P(CacheOnAndOff, ControllerAgreementTest,
                         ::testing::Values(size_t{1024}, size_t{0}),
                         [](const auto& info) {
                           return info.param > 0 ? std::string("Cache")
                                                 : std::string("NoCache");
                         });

TEST(ControllerTest, ASteadyLoopRunsFromTheCacheAfterItsFirstCycle) {
  constexpr int kCycles = 6;
  const std::vector<Request> step = {Allreduce("g1"), Allreduce("g2"),
                                     Allreduce("g3", {2, 2})};
  std::vector<std::vector<Step>> script(3);
  for (auto& rank : script) rank.assign(kCycles, Send(step));
  const auto logs = RunRanks(script);
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(summaries[rank],
              std::vector<std::string>(kCycles, "g1:run;g2:run;g3:run;"))
        << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.coordinator_rounds, 1) << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.cache_hits, 3 * (kCycles - 1));
  }
}

TEST(ControllerTest, AHitWaitsForTheRanksThatHaveNotSubmittedItYet) {
  const auto a = Allreduce("a");
  const auto logs = RunRanks({
      {Send({a}), Send({a}), Send({}), Send({})},
      {Send({a}), Send({}), Send({}), Send({a})},
  });
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(summaries[rank],
              (std::vector<std::string>{"a:run;", "", "", "a:run;"}))
        << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.coordinator_rounds, 1) << "rank " << rank;
  }
}

TEST(ControllerTest, AMismatchFailsOnEveryRank) {
  const auto logs = RunRanks({
      {Send({Allreduce("w", {4})})},
      {Send({Allreduce("w", {8})})},
      {Send({Allreduce("w", {4})})},
  });
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 1u);
    ASSERT_TRUE(logs[rank].answers[0].ok());
    const ResponseList& list = *logs[rank].answers[0];
    ASSERT_EQ(list.responses.size(), 1u) << "rank " << rank;
    EXPECT_EQ(list.responses[0].kind, Response::Kind::kError);
    EXPECT_EQ(list.responses[0].error_code, Code::kMismatch);
    EXPECT_EQ(list.responses[0].error_message,
              "allreduce 'w': ranks disagree on the shape: rank 0 has [4]; "
              "rank 1 has [8]")
        << "rank " << rank;
  }
}

// One rank's request for a cached name changed: the entry is dropped on
// every rank, the others' hits go to the coordinator with it, and the
// disagreement fails everywhere; then the name is negotiated and cached
// afresh.
TEST(ControllerTest, AChangedRequestForACachedNameFailsOnEveryRank) {
  const auto small = Allreduce("a", {4}), big = Allreduce("a", {8});
  const auto logs = RunRanks({
      {Send({small}), Send({small}), Send({small}), Send({small})},
      {Send({small}), Send({big}), Send({small}), Send({small})},
  });
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(summaries[rank],
              (std::vector<std::string>{"a:run;", "a:err(mismatch);", "a:run;",
                                        "a:run;"}))
        << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.coordinator_rounds, 3) << "rank " << rank;
    EXPECT_EQ(logs[rank].stats.cache_hits, 1) << "rank " << rank;
  }
}

TEST(ControllerTest, AShutdownIsAgreedInTheCycleOneRankAsksForIt) {
  const auto a = Allreduce("a");
  const auto logs = RunRanks({
      {Send({a}), Send({a})},
      {Send({a}), Send({a})},
      {Send({a}), Send({a}, /*shutdown=*/true)},
  });
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(summaries[rank],
              (std::vector<std::string>{"a:run;", "shutdown;a:run;"}))
        << "rank " << rank;
  }
}

TEST(ControllerTest, ARankThatStopsAnsweringIsATimeoutOnTheOthers) {
  constexpr auto kTimeout = 300ms;
  const auto a = Allreduce("a");
  const auto logs = RunRanks(
      {
          {Send({a}), Send({a})},
          {Send({a}), Send({a})},
          {Send({a}), StopAnswering()},
      },
      Options(), kTimeout);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 2u) << "rank " << rank;
    const Status& s = logs[rank].answers[1].status();
    EXPECT_EQ(s.code(), Code::kTimeout) << s.ToString();
    EXPECT_NE(s.message().find("response cache bit exchange"),
              std::string::npos)
        << s.ToString();
    EXPECT_GE(logs[rank].last_cycle, kTimeout);
    EXPECT_LT(logs[rank].last_cycle, 10s) << "rank " << rank;
  }
}

TEST(ControllerTest, ARankThatDiesIsATransportErrorOnTheOthers) {
  const auto a = Allreduce("a");
  const auto logs = RunRanks(
      {
          {Send({a}), Send({a}), Send({a})},
          {Send({a}), Send({a}), Send({a})},
          {Send({a}), Send({a}), Send({a})},
          {Send({a}), Send({a}), Die()},
      },
      Options(), 60s);  // never reached: the death ends the waits
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 3u) << "rank " << rank;
    EXPECT_TRUE(logs[rank].answers[1].ok());
    const Status& s = logs[rank].answers[2].status();
    EXPECT_EQ(s.code(), Code::kTransport) << s.ToString();
    EXPECT_NE(s.message().find("rank 3 died (killed by the test)"),
              std::string::npos)
        << s.ToString();
    EXPECT_LT(logs[rank].last_cycle, 10s) << "rank " << rank;
  }
}

}  // namespace
}  // namespace hvd::runtime
