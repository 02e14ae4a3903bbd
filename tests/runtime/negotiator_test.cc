// The Negotiator with its ranks as threads on the in-process control plane:
// every rank gets the same answer, a disagreement fails on every rank,
// messages longer than a slot cross in extra rounds (and the common case
// costs one gather and one broadcast), and a rank that stops answering or
// dies is a bounded error on the others. The coordinator's own rules are
// coordinator_test.cc's.
#include "negotiation/negotiator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "in_process_control_plane.h"
#include "rank_script.h"

namespace hvd::runtime {
namespace {

using common::Code;
using common::Status;
using namespace std::chrono_literals;

// A plane that counts the calls it passes on.
class CountingPlane : public ControlPlane {
 public:
  explicit CountingPlane(std::unique_ptr<ControlPlane> inner)
      : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status Gather(std::string_view what, const void* in, size_t bytes,
                void* out) override {
    ++gathers;
    return inner_->Gather(what, in, bytes, out);
  }
  Status Broadcast(std::string_view what, void* buffer, size_t bytes) override {
    ++broadcasts;
    return inner_->Broadcast(what, buffer, bytes);
  }
  int gathers = 0;
  int broadcasts = 0;

 private:
  std::unique_ptr<ControlPlane> inner_;
};

// One rank's cycles (CycleLog) and the calls its plane made.
struct RankLog : CycleLog {
  int gathers = 0;
  int broadcasts = 0;
};

// Runs every rank's steps (script[rank][cycle]) on its own thread.
std::vector<RankLog> RunRanks(const std::vector<std::vector<Step>>& script,
                              std::chrono::milliseconds timeout = 30s) {
  const int size = static_cast<int>(script.size());
  auto hub = std::make_shared<InProcessHub>(size, timeout);
  std::vector<RankLog> logs(size);
  OnEveryRank(size, [&](int rank) {
    CountingPlane plane(std::make_unique<InProcessControlPlane>(hub, rank));
    Negotiator negotiator(plane, Ranks(size));
    RankLog& log = logs[rank];
    Play(
        *hub, rank, script[rank],
        [&](const RequestList& list) { return negotiator.Exchange(list); },
        &log);
    log.gathers = plane.gathers;
    log.broadcasts = plane.broadcasts;
  });
  return logs;
}

TEST(NegotiatorTest, EveryRankGetsTheSameAnswerInTheOrderNamesBecameReady) {
  Request gather = Allreduce("g", {2, 3});
  gather.type = OpType::kAllgather;
  Request gather_long = gather;
  gather_long.shape = {5, 3};
  const auto logs = RunRanks({
      {Send({Allreduce("a"), Allreduce("b")}), Send({gather}), Send({})},
      {Send({Allreduce("b")}), Send({Allreduce("a"), gather_long}), Send({})},
      {Send({Allreduce("b"), gather}), Send({}), Send({Allreduce("a")})},
  });
  const auto summaries = Summaries(logs);
  const std::vector<std::string> expected = {"b:run;", "g:run,2,5,2;",
                                             "a:run;"};
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(summaries[rank], expected) << "rank " << rank;
  }
}

TEST(NegotiatorTest, ADisagreementFailsOnEveryRank) {
  const auto logs = RunRanks({
      {Send({Allreduce("w", {4})})},
      {Send({Allreduce("w", {4})})},
      {Send({Allreduce("w", {4}, DataType::kFloat64)})},
  });
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 1u);
    ASSERT_TRUE(logs[rank].answers[0].ok());
    const ResponseList& list = *logs[rank].answers[0];
    ASSERT_EQ(list.responses.size(), 1u) << "rank " << rank;
    const Response& r = list.responses[0];
    EXPECT_EQ(r.kind, Response::Kind::kError);
    EXPECT_EQ(r.error_code, Code::kMismatch);
    EXPECT_NE(r.error_message.find("allreduce 'w': ranks disagree on the data "
                                   "type: rank 0 has float32; rank 2 has "
                                   "float64"),
              std::string::npos)
        << r.error_message;
    EXPECT_EQ(r.error_message, logs[0].answers[0]->responses[0].error_message)
        << "rank " << rank << " was told something else";
  }
}

TEST(NegotiatorTest, ACycleCostsOneGatherAndOneBroadcast) {
  const auto logs = RunRanks({
      {Send({Allreduce("a")}), Send({})},
      {Send({Allreduce("a")}), Send({})},
  });
  for (const RankLog& log : logs) {
    EXPECT_EQ(log.gathers, 2);
    EXPECT_EQ(log.broadcasts, 2);
  }
}

TEST(NegotiatorTest, LongListsCrossInExtraRoundsWithTheSameAnswer) {
  // A request with a 40-byte name and one dimension encodes to 87 bytes,
  // its response to 97; a slot holds 2 KiB.
  std::vector<Request> first, second;
  for (int i = 0; i < 20; ++i) {
    const std::string number = (i < 10 ? "0" : "") + std::to_string(i);
    first.push_back(Allreduce(std::string(38, 'a') + number));
    second.push_back(Allreduce(std::string(38, 'b') + number));
  }
  std::vector<Request> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const auto logs = RunRanks({
      // 40 requests, 3.5 KB: "resend" and a second gather.
      {Send(all), Send({}), Send({})},
      // 20 each, 1.7 KB: they fit. The last completes every name at once,
      // and the 40 responses (3.9 KB) continue in a second broadcast.
      {Send({}), Send(first), Send(second)},
      {Send({}), Send(second), Send(first)},
  });
  const auto summaries = Summaries(logs);
  std::string expected;
  for (const Request& r : second) expected += r.name + ":run;";
  for (const Request& r : first) expected += r.name + ":run;";
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(summaries[rank], (std::vector<std::string>{"", "", expected}))
        << "rank " << rank;
    EXPECT_EQ(logs[rank].gathers, 2 + 1 + 1) << "rank " << rank;
    EXPECT_EQ(logs[rank].broadcasts, 2 + 1 + 2) << "rank " << rank;
  }
}

TEST(NegotiatorTest, AShutdownFromOneRankReachesEveryRankInTheSameCycle) {
  const auto logs = RunRanks({
      {Send({}), Send({})},
      {Send({}), Send({}, /*shutdown=*/true)},
      {Send({}), Send({})},
  });
  const auto summaries = Summaries(logs);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(summaries[rank], (std::vector<std::string>{"", "shutdown;"}))
        << "rank " << rank;
  }
}

TEST(NegotiatorTest, ARankThatStopsAnsweringIsATimeoutOnTheOthers) {
  constexpr auto kTimeout = 300ms;
  const auto logs = RunRanks(
      {
          {Send({Allreduce("a")}), Send({Allreduce("b")})},
          {Send({Allreduce("a")}), Send({Allreduce("b")})},
          {Send({Allreduce("a")}), StopAnswering()},
      },
      kTimeout);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 2u) << "rank " << rank;
    EXPECT_TRUE(logs[rank].answers[0].ok());
    const Status& s = logs[rank].answers[1].status();
    EXPECT_EQ(s.code(), Code::kTimeout) << s.ToString();
    // Rank 0 waits in the gather; rank 1 in the broadcast that never comes.
    EXPECT_NE(s.message().find(rank == 0 ? "negotiation gather to rank 0"
                                         : "negotiation broadcast from rank 0"),
              std::string::npos)
        << s.ToString();
    EXPECT_GE(logs[rank].last_cycle, kTimeout);
    EXPECT_LT(logs[rank].last_cycle, 10s) << "rank " << rank;
  }
}

TEST(NegotiatorTest, ARankThatDiesIsATransportErrorOnTheOthers) {
  const auto logs = RunRanks(
      {
          {Send({Allreduce("a")}), Send({Allreduce("b")})},
          {Send({Allreduce("a")}), Send({Allreduce("b")})},
          {Send({Allreduce("a")}), Die()},
      },
      60s);  // never reached: the death ends the waits
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(logs[rank].answers.size(), 2u) << "rank " << rank;
    const Status& s = logs[rank].answers[1].status();
    EXPECT_EQ(s.code(), Code::kTransport) << s.ToString();
    EXPECT_NE(s.message().find("rank 2 died"), std::string::npos)
        << s.ToString();
    EXPECT_LT(logs[rank].last_cycle, 10s) << "rank " << rank;
  }
}

TEST(NegotiatorTest, ASetOfOneMakesNoCalls) {
  const auto logs = RunRanks({{Send({Allreduce("a")}), Send({}, true)}});
  EXPECT_EQ(Summaries(logs)[0],
            (std::vector<std::string>{"a:run;", "shutdown;"}));
  EXPECT_EQ(logs[0].gathers, 0);
  EXPECT_EQ(logs[0].broadcasts, 0);
}

}  // namespace
}  // namespace hvd::runtime
