#include "negotiation/coordinator.h"

#include <gtest/gtest.h>

#include "rank_script.h"

namespace hvd::runtime {
namespace {

Request Join() {
  Request r;
  r.type = OpType::kJoin;
  r.name = "join";
  return r;
}

RequestList List(std::vector<Request> requests, bool shutdown = false) {
  RequestList list;
  list.shutdown = shutdown;
  list.requests = std::move(requests);
  return list;
}

TEST(CoordinatorTest, ReadyOnlyWhenEveryRankAsked) {
  Coordinator c(Ranks(3));
  c.Add(0, List({Allreduce("a"), Allreduce("b")}));
  c.Add(1, List({Allreduce("b")}));
  EXPECT_TRUE(c.TakeReady().responses.empty());
  c.Add(2, List({Allreduce("b")}));
  c.Add(1, List({Allreduce("a")}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].request.name, "b");
  EXPECT_EQ(ready.responses[0].kind, Response::Kind::kRun);
  c.Add(2, List({Allreduce("a")}));
  ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].request.name, "a");
  EXPECT_TRUE(c.TakeReady().responses.empty()) << "answered once only";
}

TEST(CoordinatorTest, ReadyInTheOrderTheyCompleted) {
  Coordinator c(Ranks(2));
  c.Add(0, List({Allreduce("x"), Allreduce("y"), Allreduce("z")}));
  c.Add(1, List({Allreduce("z"), Allreduce("x"), Allreduce("y")}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 3u);
  EXPECT_EQ(ready.responses[0].request.name, "z");
  EXPECT_EQ(ready.responses[1].request.name, "x");
  EXPECT_EQ(ready.responses[2].request.name, "y");
}

TEST(CoordinatorTest, AnyShutdownIsEveryonesShutdown) {
  Coordinator c(Ranks(2));
  c.Add(0, List({}));
  c.Add(1, List({}, true));
  EXPECT_TRUE(c.TakeReady().shutdown);
}

TEST(CoordinatorTest, TwiceFromOneRankIsAnError) {
  Coordinator c(Ranks(2));
  c.Add(0, List({Allreduce("a")}));
  c.Add(0, List({Allreduce("a")}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].kind, Response::Kind::kError);
  EXPECT_EQ(ready.responses[0].error_code, common::Code::kInvalidArgument);
}

TEST(CheckAgreementTest, NamesTensorRanksAndValues) {
  std::vector<Request> by_rank = {Allreduce("w", {4, 3}),
                                  Allreduce("w", {4, 3}),
                                  Allreduce("w", {4, 2}), Allreduce("w", {3})};
  Response r = CheckAgreement(by_rank);
  EXPECT_EQ(r.kind, Response::Kind::kError);
  EXPECT_EQ(r.error_code, common::Code::kMismatch);
  EXPECT_EQ(r.error_message,
            "allreduce 'w': ranks disagree on the shape: rank 0 has [4, 3]; "
            "rank 2 has [4, 2]; rank 3 has [3]");
}

TEST(CheckAgreementTest, EachFieldIsChecked) {
  auto differ = [](auto change) {
    std::vector<Request> by_rank(2, Allreduce("t"));
    change(by_rank[1]);
    return CheckAgreement(by_rank);
  };
  EXPECT_NE(differ([](Request& r) { r.dtype = DataType::kInt8; })
                .error_message.find(
                    "the data type: rank 0 has float32; rank 1 has int8"),
            std::string::npos);
  EXPECT_NE(differ([](Request& r) {
              r.op = ReduceOp::kMax;
            }).error_message.find("the reduce operation"),
            std::string::npos);
  EXPECT_NE(differ([](Request& r) {
              r.prescale = 2;
            }).error_message.find("the prescale factor"),
            std::string::npos);
  EXPECT_NE(differ([](Request& r) { r.type = OpType::kBroadcast; })
                .error_message.find("the operation: rank 0 has allreduce; "
                                    "rank 1 has broadcast"),
            std::string::npos);
}

// Horovod's "mismatched CPU/GPU device": an error on every rank, naming
// them; the CUDA ordinal itself may differ (each rank's local GPU).
TEST(CheckAgreementTest, RanksMustAgreeOnHostOrGpuNotOnTheOrdinal) {
  std::vector<Request> by_rank(3, Allreduce("t"));
  by_rank[0].device = 0;
  by_rank[1].device = 1;
  EXPECT_EQ(CheckAgreement(by_rank).error_message,
            "allreduce 't': ranks disagree on where the tensor lives: rank 0 "
            "has a CUDA device; rank 2 has host memory");
  by_rank[2].device = 2;
  EXPECT_EQ(CheckAgreement(by_rank).kind, Response::Kind::kRun);
}

TEST(CoordinatorTest, AGpuAllreduceIsRefusedWhileRanksHaveJoined) {
  Coordinator c(Ranks(2));
  c.Add(1, List({Join()}));
  Request r = Allreduce("t", {3});
  r.device = 0;
  c.Add(0, List({r}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].kind, Response::Kind::kError);
  EXPECT_NE(ready.responses[0].error_message.find(
                "of CUDA tensors cannot run while ranks have joined"),
            std::string::npos)
      << ready.responses[0].error_message;
}

TEST(CheckAgreementTest, AllgatherAllowsDifferentFirstDimension) {
  std::vector<Request> by_rank(3, Allreduce("g"));
  for (size_t i = 0; i < 3; ++i) {
    by_rank[i].type = OpType::kAllgather;
    by_rank[i].shape = {static_cast<int64_t>(i), 5};
  }
  Response ok = CheckAgreement(by_rank);
  EXPECT_EQ(ok.kind, Response::Kind::kRun);
  EXPECT_EQ(ok.sizes, (std::vector<int64_t>{0, 1, 2}));
  by_rank[2].shape = {2, 6};
  Response bad = CheckAgreement(by_rank);
  EXPECT_EQ(bad.error_message,
            "allgather 'g': ranks disagree on the shape after dimension 0: "
            "rank 0 has [*, 5]; rank 2 has [*, 6]");
}

TEST(CheckAgreementTest, BroadcastRoot) {
  std::vector<Request> by_rank(2, Allreduce("b"));
  for (auto& r : by_rank) r.type = OpType::kBroadcast;
  by_rank[1].root = 1;
  EXPECT_EQ(CheckAgreement(by_rank).error_message,
            "broadcast 'b': ranks disagree on the root rank: rank 0 has 0; "
            "rank 1 has 1");
}

TEST(CoordinatorTest, JoinedRanksDoNotHoldOthersBack) {
  Coordinator c(Ranks(3));
  c.Add(0, List({Allreduce("a")}));
  c.Add(2, List({Join()}));
  EXPECT_TRUE(c.TakeReady().responses.empty());
  c.Add(1, List({Allreduce("a")}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].kind, Response::Kind::kRun);
  EXPECT_EQ(ready.responses[0].request.shape, (std::vector<int64_t>{4}))
      << "the joined rank runs it from the response's request";
  c.Add(0, List({Join()}));
  EXPECT_TRUE(c.TakeReady().responses.empty()) << "rank 1 has not joined";
  c.Add(1, List({Join()}));
  ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].request.type, OpType::kJoin);
  EXPECT_EQ(ready.responses[0].sizes, (std::vector<int64_t>{1}))
      << "rank 1 joined last";
  c.Add(0, List({Allreduce("b")}));
  EXPECT_TRUE(c.TakeReady().responses.empty()) << "joins are over";
}

TEST(CoordinatorTest, AJoinReleasesWaitingNamesInOrder) {
  Coordinator c(Ranks(2));
  c.Add(0, List({Allreduce("x"), Allreduce("y")}));
  c.Add(1, List({Join()}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 2u);
  EXPECT_EQ(ready.responses[0].request.name, "x");
  EXPECT_EQ(ready.responses[1].request.name, "y");
}

// Horovod's rule per op while a rank has joined: allreduce (zeros from the
// joined rank) and barrier run; every other op fails on the ranks that
// called it, naming the op and the joined rank.
TEST(CoordinatorTest, JoinRulePerOp) {
  const std::vector<std::pair<OpType, bool>> rules = {
      {OpType::kAllreduce, true},      {OpType::kBarrier, true},
      {OpType::kAllgather, false},     {OpType::kBroadcast, false},
      {OpType::kAlltoall, false},      {OpType::kReducescatter, false},
      {OpType::kAddProcessSet, false},
  };
  for (const auto& [type, runs] : rules) {
    Coordinator c(Ranks(3));
    c.Add(1, List({Join()}));
    Request r = Allreduce("t", {3, 2});
    r.type = type;
    if (type == OpType::kAlltoall) r.splits = {1, 1, 1};
    c.Add(0, List({r}));
    EXPECT_TRUE(c.TakeReady().responses.empty())
        << OpTypeName(type) << ": rank 2 has neither submitted nor joined";
    c.Add(2, List({r}));
    auto ready = c.TakeReady();
    ASSERT_EQ(ready.responses.size(), 1u) << OpTypeName(type);
    const Response& got = ready.responses[0];
    if (runs) {
      EXPECT_EQ(got.kind, Response::Kind::kRun) << OpTypeName(type);
      continue;
    }
    EXPECT_EQ(got.kind, Response::Kind::kError) << OpTypeName(type);
    EXPECT_EQ(got.error_code, common::Code::kMismatch) << OpTypeName(type);
    EXPECT_EQ(got.error_message.rfind(std::string(OpTypeName(type)) + " 't'"),
              0u)
        << got.error_message;
    EXPECT_NE(got.error_message.find("rank(s) 1 have joined (hvd.join)"),
              std::string::npos)
        << got.error_message;
    // As Horovod's: an allgather under a join is most likely a sparse
    // gradient's; the message says how to avoid it.
    EXPECT_EQ(
        got.error_message.find("sparse_as_dense=True") != std::string::npos,
        type == OpType::kAllgather)
        << got.error_message;
  }
}

TEST(CoordinatorTest, AnOpRefusedForAJoinDoesNotEndTheJoin) {
  Coordinator c(Ranks(2));
  c.Add(0, List({Join()}));
  Request g = Allreduce("g", {3, 2});
  g.type = OpType::kAllgather;
  c.Add(1, List({g}));
  auto ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].kind, Response::Kind::kError);
  c.Add(1, List({Join()}));
  ready = c.TakeReady();
  ASSERT_EQ(ready.responses.size(), 1u);
  EXPECT_EQ(ready.responses[0].request.type, OpType::kJoin);
  EXPECT_EQ(ready.responses[0].sizes, (std::vector<int64_t>{1}));
}

TEST(CoordinatorTest, PendingNamesTheMissingGlobalRanks) {
  Coordinator c({4, 7, 9});
  const auto t0 = std::chrono::steady_clock::now();
  c.Add(1, List({Allreduce("late")}), t0);
  c.Add(0, List({Allreduce("late"), Allreduce("later")}),
        t0 + std::chrono::seconds(1));
  auto pending = c.Pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].name, "late");
  EXPECT_EQ(pending[0].first_seen, t0);
  EXPECT_EQ(pending[0].missing, (std::vector<int>{9}));
  EXPECT_EQ(pending[1].missing, (std::vector<int>{7, 9}));
}

TEST(CoordinatorTest, PendingNamesTheSubmittingGlobalRanks) {
  Coordinator c({4, 7, 9});
  c.Add(2, List({Allreduce("a")}));
  c.Add(0, List({Allreduce("a")}));
  auto pending = c.Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].submitted, (std::vector<int>{4, 9}));
}

TEST(CoordinatorTest, RemembersEachRanksWaitingFlag) {
  Coordinator c(Ranks(2));
  RequestList waiting = List({});
  waiting.waiting = true;
  c.Add(0, waiting);
  c.Add(1, List({}));
  EXPECT_EQ(c.waiting(), (std::vector<bool>{true, false}));
  c.Add(1, waiting);
  EXPECT_EQ(c.waiting(), (std::vector<bool>{true, true}));
}

TEST(CoordinatorTest, FailPendingFailsEveryNameAndTheJoinOnce) {
  Coordinator c(Ranks(3));
  c.Add(0, List({Join()}));
  c.Add(1, List({Allreduce("x")}));
  c.Add(2, List({Allreduce("y")}));
  EXPECT_EQ(c.Joined(), (std::vector<int>{0}));
  c.FailPending(common::Code::kMismatch, "deadlock: why");
  auto out = c.TakeReady();
  ASSERT_EQ(out.responses.size(), 3u);
  EXPECT_EQ(out.responses[0].request.name, "x");
  EXPECT_EQ(out.responses[1].request.name, "y");
  EXPECT_EQ(out.responses[2].request.type, OpType::kJoin);
  for (const Response& r : out.responses) {
    EXPECT_EQ(r.kind, Response::Kind::kError);
    EXPECT_EQ(r.error_code, common::Code::kMismatch);
    EXPECT_EQ(r.error_message, "deadlock: why");
  }
  EXPECT_TRUE(c.Pending().empty());
  EXPECT_TRUE(c.Joined().empty());
  // The names are forgotten: agreeing ranks can run them again.
  c.Add(1, List({Allreduce("y")}));
  c.Add(2, List({Allreduce("y")}));
  c.Add(0, List({Allreduce("y")}));
  out = c.TakeReady();
  ASSERT_EQ(out.responses.size(), 1u);
  EXPECT_EQ(out.responses[0].kind, Response::Kind::kRun);
}

TEST(CheckAgreementTest, AlltoallGathersTheSplitMatrix) {
  std::vector<Request> by_rank(2, Allreduce("a", {3, 2}));
  for (auto& r : by_rank) r.type = OpType::kAlltoall;
  by_rank[0].splits = {1, 2};
  by_rank[1].shape = {5, 2};
  by_rank[1].splits = {4, 1};
  Response ok = CheckAgreement(by_rank);
  EXPECT_EQ(ok.kind, Response::Kind::kRun);
  EXPECT_EQ(ok.sizes, (std::vector<int64_t>{1, 2, 4, 1}));
}

TEST(CheckAgreementTest, GroupMembershipMustAgree) {
  std::vector<Request> by_rank(2, Allreduce("t"));
  by_rank[0].group = "t+1";
  EXPECT_NE(CheckAgreement(by_rank).error_message.find(
                "the group: rank 0 has 't+1'; rank 1 has none"),
            std::string::npos);
}

}  // namespace
}  // namespace hvd::runtime
