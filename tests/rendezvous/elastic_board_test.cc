// ElasticBoard: generations, the check-in barrier and its timeout, removed
// slots, waiters moved on by a newer generation, Close(); and the check-in
// answer's JSON codec (worker_assignment.h).
#include "hvd/rendezvous/elastic_board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::rendezvous {
namespace {

using common::Code;
using common::Result;
using common::Status;
using namespace std::chrono_literals;

// A plan for `generation` over `hosts` x `per_host` slots, ranks in order.
GenerationPlan Plan(int64_t generation, const std::vector<std::string>& hosts,
                    int per_host, bool sync = true) {
  GenerationPlan plan;
  plan.generation = generation;
  const int size = static_cast<int>(hosts.size()) * per_host;
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int l = 0; l < per_host; ++l) {
      WorkerAssignment a;
      a.generation = generation;
      a.layout.rank = static_cast<int>(h) * per_host + l;
      a.layout.size = size;
      a.layout.local_rank = l;
      a.layout.local_size = per_host;
      a.layout.cross_rank = static_cast<int>(h);
      a.layout.cross_size = static_cast<int>(hosts.size());
      a.sync = sync;
      plan.slots[SlotName(hosts[h], l)] = a;
    }
  }
  return plan;
}

// Waits (up to 10 s) until `slot` is no longer missing from the newest
// generation: its check-in is registered and the caller may act.
void AwaitCheckedIn(const ElasticBoard& board, const std::string& slot) {
  auto give_up = std::chrono::steady_clock::now() + 10s;
  auto missing = [&] {
    for (const auto& s : board.Missing()) {
      if (s == slot) return true;
    }
    return false;
  };
  while (missing() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_FALSE(missing()) << slot << " never checked in";
}

// Waits (up to 10 s) until `count` check-ins are blocked in the board's
// wait, so that what the caller does next happens during it.
void AwaitWaiting(const ElasticBoard& board, int count) {
  auto give_up = std::chrono::steady_clock::now() + 10s;
  while (board.waiting() < count &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(board.waiting(), count) << "check-ins never waited";
}

Result<WorkerAssignment> Unset() { return Status::Internal("unset"); }

// ---- worker_assignment.h ------------------------------------------------

TEST(WorkerAssignmentTest, SlotNameIsHostColonLocalRank) {
  EXPECT_EQ(SlotName("node-1", 0), "node-1:0");
  EXPECT_EQ(SlotName("10.0.0.7", 13), "10.0.0.7:13");
}

TEST(WorkerAssignmentTest, EncodeDecodeRoundTrip) {
  WorkerAssignment a;
  a.generation = 1234567890123;  // beyond 32 bits
  a.layout.rank = 5;
  a.layout.size = 8;
  a.layout.local_rank = 1;
  a.layout.local_size = 2;
  a.layout.cross_rank = 2;
  a.layout.cross_size = 4;
  a.sync = false;
  auto decoded = DecodeAssignment(EncodeAssignment(a));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->generation, 1234567890123);
  EXPECT_EQ(decoded->layout.rank, 5);
  EXPECT_EQ(decoded->layout.size, 8);
  EXPECT_EQ(decoded->layout.local_rank, 1);
  EXPECT_EQ(decoded->layout.local_size, 2);
  EXPECT_EQ(decoded->layout.cross_rank, 2);
  EXPECT_EQ(decoded->layout.cross_size, 4);
  EXPECT_FALSE(decoded->sync);
  a.sync = true;
  auto synced = DecodeAssignment(EncodeAssignment(a));
  ASSERT_TRUE(synced.ok());
  EXPECT_TRUE(synced->sync);
}

// The generation's reason and hosts travel with every answer.
TEST(WorkerAssignmentTest, ReasonAndHostsRoundTrip) {
  WorkerAssignment a;
  a.reason = "slot b:0 failed; host b blacklisted";
  a.hosts = {"a:2", "c:1"};
  auto decoded = DecodeAssignment(EncodeAssignment(a));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->reason, a.reason);
  EXPECT_EQ(decoded->hosts, a.hosts);
  // Absent (an answer without them): empty.
  auto bare = DecodeAssignment(
      R"({"generation":1,"rank":0,"size":1,"local_rank":0,"local_size":1,)"
      R"("cross_rank":0,"cross_size":1,"sync":true})");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->reason, "");
  EXPECT_TRUE(bare->hosts.empty());
  // A host name that is not UTF-8 (discovery prints bytes) still encodes.
  a.hosts = {std::string("h\xff:1")};
  auto odd = DecodeAssignment(EncodeAssignment(a));
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_EQ(odd->hosts, std::vector<std::string>{"h\xEF\xBF\xBD:1"});
}

// A long reason is cut to the bound, never inside a UTF-8 character, on
// both sides of the wire.
TEST(WorkerAssignmentTest, ReasonsAreBounded) {
  EXPECT_EQ(ShortReason("start"), "start");
  const std::string fits(kMaxReasonBytes, 'x');
  EXPECT_EQ(ShortReason(fits), fits);
  const std::string cut = ShortReason(fits + "y");
  EXPECT_EQ(cut.size(), kMaxReasonBytes);
  EXPECT_EQ(cut, std::string(kMaxReasonBytes - 3, 'x') + "...");
  // "é" is two bytes; one of them would fall on the cut.
  std::string accents;
  while (accents.size() < 2 * kMaxReasonBytes) accents += "\xC3\xA9";
  const std::string whole = ShortReason("x" + accents);
  EXPECT_LE(whole.size(), kMaxReasonBytes);
  EXPECT_EQ(whole.substr(whole.size() - 3), "...");
  const std::string kept = whole.substr(1, whole.size() - 4);
  EXPECT_EQ(kept.size() % 2, 0u) << whole;
  WorkerAssignment a;
  a.reason = fits + fits;
  auto decoded = DecodeAssignment(
      R"({"generation":1,"rank":0,"size":1,"local_rank":0,"local_size":1,)"
      R"("cross_rank":0,"cross_size":1,"sync":true,"reason":")" +
      a.reason + R"("})");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->reason.size(), kMaxReasonBytes);
}

TEST(WorkerAssignmentTest, MalformedJsonIsAnError) {
  const std::string valid = EncodeAssignment(WorkerAssignment{});
  ASSERT_TRUE(DecodeAssignment(valid).ok());
  for (const std::string& text :
       {std::string(""), std::string("not json"), std::string("{"),
        std::string("[]"), std::string("null"), std::string("{}"),
        // a field missing
        std::string(R"({"generation":1,"rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1})"),
        // a field of the wrong type
        std::string(R"({"generation":"1","rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1,)"
                    R"("sync":true})"),
        std::string(R"({"generation":1,"rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1,)"
                    R"("sync":"yes"})"),
        std::string(R"({"generation":1,"rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1,)"
                    R"("sync":true,"reason":7})"),
        std::string(R"({"generation":1,"rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1,)"
                    R"("sync":true,"hosts":"a:1"})"),
        std::string(R"({"generation":1,"rank":0,"size":1,"local_rank":0,)"
                    R"("local_size":1,"cross_rank":0,"cross_size":1,)"
                    R"("sync":true,"hosts":["a:1",2]})")}) {
    auto decoded = DecodeAssignment(text);
    ASSERT_FALSE(decoded.ok()) << text;
    EXPECT_NE(decoded.status().code(), Code::kOk);
    EXPECT_NE(decoded.status().message().find("malformed"), std::string::npos)
        << decoded.status().ToString();
  }
}

// Floats and integers that do not fit their field are refused, not cast: a
// float out of range was undefined behaviour (the cast notify_messages_fuzz
// found in the notify messages, also here).
TEST(WorkerAssignmentTest, NumbersThatDoNotFitAreRefused) {
  const std::string rest =
      R"("size":4,"local_rank":1,"local_size":2,"cross_rank":1,)"
      R"("cross_size":2,"sync":true})";
  ASSERT_TRUE(DecodeAssignment(R"({"generation":1,"rank":3,)" + rest).ok());
  for (const std::string& head : {
           std::string(R"({"generation":1,"rank":3.0,)"),
           std::string(R"({"generation":1,"rank":1e19,)"),
           std::string(R"({"generation":1,"rank":2147483648,)"),
           std::string(R"({"generation":1,"rank":-2147483649,)"),
           std::string(R"({"generation":1e19,"rank":3,)"),
           std::string(R"({"generation":9223372036854775808,"rank":3,)"),
       }) {
    auto decoded = DecodeAssignment(head + rest);
    ASSERT_FALSE(decoded.ok()) << head;
    EXPECT_NE(decoded.status().message().find("malformed"), std::string::npos)
        << decoded.status().ToString();
  }
}

// ---- ElasticBoard -------------------------------------------------------

TEST(ElasticBoardTest, EmptyBoardHasGenerationZeroAndNothingMissing) {
  ElasticBoard board;
  EXPECT_EQ(board.generation(), 0);
  EXPECT_TRUE(board.Missing().empty());
  EXPECT_TRUE(board.NotifyAddresses().empty());
}

TEST(ElasticBoardTest, CheckInBeforeAnyGenerationTimesOut) {
  ElasticBoard board;
  auto started = std::chrono::steady_clock::now();
  auto result = board.CheckIn("a:0", 0, "", 50ms);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_NE(result.status().message().find("no generation after 0"),
            std::string::npos)
      << result.status().ToString();
  EXPECT_GE(elapsed, 50ms);
  EXPECT_LT(elapsed, 3s);
}

TEST(ElasticBoardTest, GenerationNumbersMustGrow) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(3, {"a"}, 1)).ok());
  EXPECT_EQ(board.generation(), 3);
  Status same = board.Publish(Plan(3, {"b"}, 1));
  EXPECT_EQ(same.code(), Code::kInvalidArgument);
  EXPECT_NE(same.message().find("not newer than 3"), std::string::npos)
      << same.ToString();
  EXPECT_EQ(board.Publish(Plan(2, {"b"}, 1)).code(), Code::kInvalidArgument);
  // The refused plans changed nothing: still generation 3 with slot a:0.
  EXPECT_EQ(board.generation(), 3);
  EXPECT_EQ(board.Missing(), std::vector<std::string>{"a:0"});
  ASSERT_TRUE(board.Publish(Plan(4, {"b"}, 1)).ok());
  EXPECT_EQ(board.generation(), 4);
  EXPECT_EQ(board.Missing(), std::vector<std::string>{"b:0"});
}

TEST(ElasticBoardTest, SingleSlotGenerationAnswersAtOnce) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a"}, 1, /*sync=*/false)).ok());
  auto result = board.CheckIn("a:0", 0, "a:9000", 5s);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->generation, 1);
  EXPECT_EQ(result->layout.rank, 0);
  EXPECT_EQ(result->layout.size, 1);
  EXPECT_FALSE(result->sync);
  EXPECT_TRUE(board.Missing().empty());
  // Checking in again for the same generation answers again.
  auto again = board.CheckIn("a:0", 0, "", 5s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->generation, 1);
}

TEST(ElasticBoardTest, TheAnswerCarriesTheGenerationsReasonAndHosts) {
  ElasticBoard board;
  GenerationPlan plan = Plan(2, {"a"}, 1);
  plan.reason = "hosts changed";
  plan.hosts = {"a:1"};
  ASSERT_TRUE(board.Publish(plan).ok());
  auto result = board.CheckIn("a:0", 0, "", 5s);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->reason, "hosts changed");
  EXPECT_EQ(result->hosts, std::vector<std::string>{"a:1"});
}

TEST(ElasticBoardTest, AReplacedProcessCannotTakeItsSlotBack) {
  // Worker 7 ran a:0 in generation 1; its host was cut off, and after a
  // generation without it, worker 12 runs a:0. Worker 7 comes back.
  ElasticBoard board;
  GenerationPlan first = Plan(1, {"a", "b"}, 1);
  first.workers = {{"a:0", 7}, {"b:0", 8}};
  ASSERT_TRUE(board.Publish(first).ok());
  ASSERT_TRUE(board.Publish(Plan(2, {"b"}, 1)).ok());
  GenerationPlan third = Plan(3, {"a", "b"}, 1);
  third.workers = {{"a:0", 12}, {"b:0", 8}};
  ASSERT_TRUE(board.Publish(third).ok());
  auto stale = board.CheckIn("a:0", 1, "a:9000", 5s, 7);
  EXPECT_EQ(stale.status().code(), Code::kNotFound);
  EXPECT_NE(stale.status().message().find("belongs to worker 12"),
            std::string::npos)
      << stale.status().ToString();
  // It did not count as the slot's check-in, nor did it register its
  // notification address; nor does a process without an id.
  EXPECT_EQ(board.CheckIn("a:0", 0, "", 0ms).status().code(), Code::kNotFound);
  EXPECT_EQ(board.Missing(), (std::vector<std::string>{"a:0", "b:0"}));
  EXPECT_TRUE(board.NotifyAddresses().empty());
  // The slot's own process and its peer meet.
  std::thread peer(
      [&] { EXPECT_TRUE(board.CheckIn("b:0", 2, "", 5s, 8).ok()); });
  auto own = board.CheckIn("a:0", 0, "a:9001", 5s, 12);
  peer.join();
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->generation, 3);
}

TEST(ElasticBoardTest, MissingListsSlotsNotCheckedInYet) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 2)).ok());
  EXPECT_EQ(board.Missing(),
            (std::vector<std::string>{"a:0", "a:1", "b:0", "b:1"}));
  // A check-in that times out still counts: checking in again continues the
  // same barrier.
  auto timed_out = board.CheckIn("a:1", 0, "", 10ms);
  EXPECT_EQ(timed_out.status().code(), Code::kTimeout);
  EXPECT_NE(timed_out.status().message().find(
                "3 of 4 slots of generation 1 have not checked in"),
            std::string::npos)
      << timed_out.status().ToString();
  EXPECT_EQ(board.Missing(), (std::vector<std::string>{"a:0", "b:0", "b:1"}));
  EXPECT_EQ(board.CheckIn("b:0", 0, "", 10ms).status().code(), Code::kTimeout);
  EXPECT_EQ(board.Missing(), (std::vector<std::string>{"a:0", "b:1"}));
}

TEST(ElasticBoardTest, FourSlotsFromFourThreadsAnswerOnlyAfterTheLast) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 2)).ok());
  const std::vector<std::string> slots = {"a:0", "a:1", "b:0", "b:1"};
  std::vector<Result<WorkerAssignment>> results(4, Unset());
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  // The first three check in and must all still be waiting.
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      results[i] = board.CheckIn(slots[i], 0, "addr" + std::to_string(i), 30s);
      ++answered;
    });
  }
  for (int i = 0; i < 3; ++i) AwaitCheckedIn(board, slots[i]);
  EXPECT_EQ(board.Missing(), std::vector<std::string>{"b:1"});
  EXPECT_EQ(answered, 0);
  threads.emplace_back([&] {
    results[3] = board.CheckIn(slots[3], 0, "addr3", 30s);
    ++answered;
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered, 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok())
        << slots[i] << ": " << results[i].status().ToString();
    EXPECT_EQ(results[i]->generation, 1);
    EXPECT_EQ(results[i]->layout.rank, i) << slots[i];
    EXPECT_EQ(results[i]->layout.size, 4);
    EXPECT_EQ(results[i]->layout.local_rank, i % 2) << slots[i];
    EXPECT_EQ(results[i]->layout.cross_rank, i / 2) << slots[i];
  }
  EXPECT_TRUE(board.Missing().empty());
  EXPECT_EQ(board.NotifyAddresses(),
            (std::map<std::string, std::string>{{"a:0", "addr0"},
                                                {"a:1", "addr1"},
                                                {"b:0", "addr2"},
                                                {"b:1", "addr3"}}));
}

TEST(ElasticBoardTest, RemovedSlotGetsNotFound) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 1)).ok());
  ASSERT_TRUE(board.Publish(Plan(2, {"a"}, 1)).ok());
  auto removed = board.CheckIn("b:0", 1, "", 5s);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), Code::kNotFound);
  EXPECT_NE(removed.status().message().find("b:0"), std::string::npos);
  EXPECT_NE(removed.status().message().find("generation 2"), std::string::npos)
      << removed.status().ToString();
  // The removed slot did not count towards generation 2's barrier.
  EXPECT_EQ(board.Missing(), std::vector<std::string>{"a:0"});
  // A slot that was never part of the job is not found either.
  EXPECT_EQ(board.CheckIn("zz:3", 0, "", 5s).status().code(), Code::kNotFound);
}

TEST(ElasticBoardTest, CheckInWaitsForAGenerationNewerThanAfter) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a"}, 1)).ok());
  // The worker already belongs to generation 1: nothing newer yet.
  auto waited = board.CheckIn("a:0", 1, "", 20ms);
  EXPECT_EQ(waited.status().code(), Code::kTimeout);
  EXPECT_NE(waited.status().message().find("no generation after 1"),
            std::string::npos)
      << waited.status().ToString();
  // Not checked in for generation 1 by that call.
  EXPECT_EQ(board.Missing(), std::vector<std::string>{"a:0"});

  Result<WorkerAssignment> result = Unset();
  std::thread waiter([&] { result = board.CheckIn("a:0", 1, "", 30s); });
  AwaitWaiting(board, 1);
  EXPECT_TRUE(board.Publish(Plan(2, {"a"}, 1)).ok());
  waiter.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->generation, 2);
}

TEST(ElasticBoardTest, NewerGenerationMovesWaitersOn) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b", "c"}, 1)).ok());
  Result<WorkerAssignment> a_result = Unset(), b_result = Unset();
  std::thread a([&] { a_result = board.CheckIn("a:0", 0, "", 30s); });
  std::thread b([&] { b_result = board.CheckIn("b:0", 0, "", 30s); });
  AwaitCheckedIn(board, "a:0");
  AwaitCheckedIn(board, "b:0");
  // c is gone before it checks in: generation 2 is a and b only, in a
  // different order. The waiters check in for it and complete it.
  EXPECT_TRUE(board.Publish(Plan(2, {"b", "a"}, 1)).ok());
  a.join();
  b.join();
  ASSERT_TRUE(a_result.ok()) << a_result.status().ToString();
  ASSERT_TRUE(b_result.ok()) << b_result.status().ToString();
  EXPECT_EQ(a_result->generation, 2);
  EXPECT_EQ(b_result->generation, 2);
  EXPECT_EQ(b_result->layout.rank, 0);
  EXPECT_EQ(a_result->layout.rank, 1);
  EXPECT_EQ(a_result->layout.size, 2);
  EXPECT_TRUE(board.Missing().empty());
  // c learns it was removed.
  EXPECT_EQ(board.CheckIn("c:0", 0, "", 5s).status().code(), Code::kNotFound);
}

TEST(ElasticBoardTest, WaiterRemovedByNewerGenerationGetsNotFound) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 1)).ok());
  Result<WorkerAssignment> result = Unset();
  std::thread waiter([&] { result = board.CheckIn("b:0", 0, "", 30s); });
  AwaitCheckedIn(board, "b:0");
  EXPECT_TRUE(board.Publish(Plan(2, {"a"}, 1)).ok());
  waiter.join();
  EXPECT_EQ(result.status().code(), Code::kNotFound)
      << result.status().ToString();
}

TEST(ElasticBoardTest, NotifyAddressesKeepSlotsThatStay) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 1)).ok());
  std::thread b(
      [&] { EXPECT_TRUE(board.CheckIn("b:0", 0, "b:7001", 30s).ok()); });
  AwaitCheckedIn(board, "b:0");
  EXPECT_TRUE(board.CheckIn("a:0", 0, "a:7000", 30s).ok());
  b.join();
  EXPECT_EQ(board.NotifyAddresses(),
            (std::map<std::string, std::string>{{"a:0", "a:7000"},
                                                {"b:0", "b:7001"}}));
  // b leaves, c joins: a's address stays, b's goes, c has none yet.
  ASSERT_TRUE(board.Publish(Plan(2, {"a", "c"}, 1)).ok());
  EXPECT_EQ(board.NotifyAddresses(),
            (std::map<std::string, std::string>{{"a:0", "a:7000"}}));
  // An empty address keeps the one on record; a new one replaces it.
  std::thread c(
      [&] { EXPECT_TRUE(board.CheckIn("c:0", 1, "c:7002", 30s).ok()); });
  AwaitCheckedIn(board, "c:0");
  EXPECT_TRUE(board.CheckIn("a:0", 1, "", 30s).ok());
  c.join();
  EXPECT_EQ(board.NotifyAddresses(),
            (std::map<std::string, std::string>{{"a:0", "a:7000"},
                                                {"c:0", "c:7002"}}));
  ASSERT_TRUE(board.Publish(Plan(3, {"a", "c"}, 1)).ok());
  ASSERT_TRUE(board.Publish(Plan(4, {"c"}, 1)).ok());
  ASSERT_TRUE(board.CheckIn("c:0", 3, "c:7100", 30s).ok());
  EXPECT_EQ(board.NotifyAddresses(),
            (std::map<std::string, std::string>{{"c:0", "c:7100"}}));
}

TEST(ElasticBoardTest, CloseEndsWaitsNowAndLater) {
  ElasticBoard board;
  ASSERT_TRUE(board.Publish(Plan(1, {"a", "b"}, 1)).ok());
  Result<WorkerAssignment> in_barrier = Unset(), no_generation = Unset();
  std::thread waiter([&] { in_barrier = board.CheckIn("a:0", 0, "", 60s); });
  std::thread early([&] { no_generation = board.CheckIn("a:0", 1, "", 60s); });
  AwaitWaiting(board, 2);
  auto started = std::chrono::steady_clock::now();
  board.Close();
  waiter.join();
  early.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_EQ(in_barrier.status().code(), Code::kAborted)
      << in_barrier.status().ToString();
  EXPECT_EQ(no_generation.status().code(), Code::kAborted)
      << no_generation.status().ToString();
  // Later check-ins, even ones that would complete the barrier, abort.
  EXPECT_EQ(board.CheckIn("b:0", 0, "", 60s).status().code(), Code::kAborted);
}

TEST(ElasticBoardTest, ManyRoundsOfConcurrentCheckIns) {
  // Eight workers go through five generations; each round every worker
  // checks in with the generation it last belonged to. The next generation
  // is published only once every worker has its answer for this one (a
  // newer generation would move a waiter that has not woken yet on to it).
  ElasticBoard board;
  const std::vector<std::string> hosts = {"h0", "h1", "h2", "h3"};
  constexpr int kWorkers = 8, kRounds = 5;
  std::atomic<int> answered{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      const std::string slot = SlotName(hosts[w / 2], w % 2);
      int64_t after = 0;
      for (int round = 1; round <= kRounds; ++round) {
        auto result = board.CheckIn(slot, after, "", 30s);
        if (!result.ok() || result->generation != round ||
            result->layout.rank != w) {
          ++wrong;
        }
        after = round;
        ++answered;
      }
    });
  }
  for (int round = 1; round <= kRounds; ++round) {
    EXPECT_TRUE(board.Publish(Plan(round, hosts, 2)).ok());
    auto give_up = std::chrono::steady_clock::now() + 10s;
    while (answered < round * kWorkers &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    if (answered != round * kWorkers) {
      ADD_FAILURE() << "round " << round << ": " << answered << " answers";
      break;
    }
    EXPECT_TRUE(board.Missing().empty()) << "round " << round;
  }
  board.Close();  // frees the workers still waiting after a failure
  for (auto& t : workers) t.join();
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace hvd::rendezvous
