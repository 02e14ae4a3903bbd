// The NCCL communicator's life-cycle without a GPU: the watchdog's and the
// reset's decisions as pure functions, and the Communicator over a fake
// seam (nccl_api.h) that injects the faults a dead or hung peer causes:
// an init that never finishes, an asynchronous error, a finalize that
// hangs, a failed shrink, an abort from another thread.
#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "etcd_member.h"
#include "hvd/rendezvous/etcd_client.h"
#include "hvd/rendezvous/server.h"
#include "hvd/runtime/config.h"
#include "ops/nccl/communicator.h"
#include "ops/nccl/id_exchange.h"
#include "ops/nccl/watchdog.h"
#include "runtime/worker_key_for_tests.h"

namespace hvd::runtime::nccl {
namespace {

using common::Code;
using common::Status;
using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- DecideWatch ----

Watch InProgressSince(Clock::time_point started) {
  Watch watch;
  watch.what = "NCCL init of set 0 on device 1";
  watch.started = started;
  watch.deadline = seconds(30);
  watch.state = {CommHealth::kInProgress, Status::Ok()};
  return watch;
}

TEST(DecideWatchTest, WaitsUntilTheDeadlineThenAbortsWithATimeout) {
  const Clock::time_point t0{};
  Watch watch = InProgressSince(t0);
  EXPECT_EQ(DecideWatch(watch, t0).verdict, Verdict::kWait);
  EXPECT_EQ(DecideWatch(watch, t0 + milliseconds(29999)).verdict,
            Verdict::kWait);
  const WatchAction late = DecideWatch(watch, t0 + seconds(30));
  EXPECT_EQ(late.verdict, Verdict::kFail);
  EXPECT_EQ(late.status.code(), Code::kTimeout);
  EXPECT_NE(late.status.message().find("NCCL init of set 0 on device 1"),
            std::string::npos);
  EXPECT_NE(late.status.message().find("within 30 s"), std::string::npos);
  EXPECT_NE(late.status.message().find("HOROVOD_GLOO_TIMEOUT_SECONDS"),
            std::string::npos);
}

TEST(DecideWatchTest, ReadyIsDoneEvenPastTheDeadline) {
  const Clock::time_point t0{};
  Watch watch = InProgressSince(t0);
  watch.state = {CommHealth::kReady, Status::Ok()};
  EXPECT_EQ(DecideWatch(watch, t0 + seconds(60)).verdict, Verdict::kDone);
}

TEST(DecideWatchTest, NcclsErrorAbortsWithItsCodeAndWhatWaited) {
  const Clock::time_point t0{};
  Watch watch = InProgressSince(t0);
  watch.state = {CommHealth::kFailed,
                 Status::Transport("an NCCL operation failed: remote error")};
  const WatchAction action = DecideWatch(watch, t0);
  EXPECT_EQ(action.verdict, Verdict::kFail);
  EXPECT_EQ(action.status.code(), Code::kTransport);
  EXPECT_NE(action.status.message().find("remote error"), std::string::npos);
  EXPECT_NE(action.status.message().find("set 0 on device 1"),
            std::string::npos);
}

TEST(DecideWatchTest, AnAbortAskedForWinsOverEverything) {
  const Clock::time_point t0{};
  for (CommHealth health :
       {CommHealth::kReady, CommHealth::kInProgress, CommHealth::kFailed}) {
    Watch watch = InProgressSince(t0);
    watch.state = {health, health == CommHealth::kFailed
                               ? Status::Transport("peer gone")
                               : Status::Ok()};
    watch.abort_reason = "worker 3 died";
    const WatchAction action = DecideWatch(watch, t0);
    EXPECT_EQ(action.verdict, Verdict::kFail);
    EXPECT_EQ(action.status.code(), Code::kAborted);
    EXPECT_NE(action.status.message().find("worker 3 died"), std::string::npos);
  }
}

// ---- PlanReset ----

constexpr int kNccl228 = 22809;

TEST(PlanResetTest, SurvivorsInTheirOldOrderShrinkAwayWhoLeft) {
  const ResetPlan plan = PlanReset(4, {0, 2, 3}, kNccl228);
  EXPECT_TRUE(plan.shrink);
  EXPECT_EQ(plan.excluded, std::vector<int>({1}));
  const ResetPlan two_left = PlanReset(5, {1, 4}, kNccl228);
  EXPECT_TRUE(two_left.shrink);
  EXPECT_EQ(two_left.excluded, std::vector<int>({0, 2, 3}));
}

TEST(PlanResetTest, ANewcomerOrANewOrderNeedsANewCommunicator) {
  const ResetPlan joined = PlanReset(3, {0, 1, -1}, kNccl228);
  EXPECT_FALSE(joined.shrink);
  EXPECT_NE(joined.why.find("rank 2 is new"), std::string::npos);
  const ResetPlan swapped = PlanReset(3, {1, 0}, kNccl228);
  EXPECT_FALSE(swapped.shrink);
  EXPECT_NE(swapped.why.find("old order"), std::string::npos);
  EXPECT_FALSE(PlanReset(3, {0, 0}, kNccl228).shrink);
  EXPECT_FALSE(PlanReset(3, {0, 3}, kNccl228).shrink);  // not in the old one
}

TEST(PlanResetTest, EveryOneInPlaceKeepsItAnOldNcclCannotShrink) {
  EXPECT_FALSE(PlanReset(0, {-1, -1}, kNccl228).shrink);
  const ResetPlan nobody_left = PlanReset(3, {0, 1, 2}, 22605);
  EXPECT_TRUE(nobody_left.keep);  // keeping needs no shrink
  EXPECT_FALSE(nobody_left.shrink);
  const ResetPlan old_nccl = PlanReset(4, {0, 2, 3}, 22605);
  EXPECT_FALSE(old_nccl.shrink || old_nccl.keep);
  EXPECT_NE(old_nccl.why.find("2.27"), std::string::npos);
}

// ---- PlanInheritance ----

Inheritance From(int64_t generation, int rank, int size, bool failed = false,
                 int nccl_version = kNccl228) {
  return {generation, rank, size, failed, nccl_version};
}

// After a HostsUpdated that removed a host, the generation ended in order:
// a plain shrink. After a death, NCCL must end the pending work first.
TEST(PlanInheritanceTest, TheSurvivorsOfOneCommunicatorShrinkAwayWhoLeft) {
  const ResetPlan removed = PlanInheritance({From(5, 0, 3), From(5, 2, 3)});
  EXPECT_TRUE(removed.shrink) << removed.why;
  EXPECT_FALSE(removed.abort_first);
  EXPECT_EQ(removed.excluded, std::vector<int>({1}));
  const ResetPlan died =
      PlanInheritance({From(5, 0, 3), From(5, 2, 3, /*failed=*/true)});
  EXPECT_TRUE(died.shrink);
  EXPECT_TRUE(died.abort_first);
}

TEST(PlanInheritanceTest, EveryRankBackAfterAnOrderlyEndKeepsIt) {
  const ResetPlan same = PlanInheritance({From(5, 0, 2), From(5, 1, 2)});
  EXPECT_TRUE(same.keep);
  const ResetPlan failed =
      PlanInheritance({From(5, 0, 2, /*failed=*/true), From(5, 1, 2)});
  EXPECT_FALSE(failed.keep || failed.shrink);
  EXPECT_NE(failed.why.find("failed"), std::string::npos);
}

TEST(PlanInheritanceTest, MembersOfDifferentCommunicatorsMakeANewOne) {
  const ResetPlan generations = PlanInheritance({From(5, 0, 3), From(4, 2, 3)});
  EXPECT_FALSE(generations.shrink);
  EXPECT_NE(generations.why.find("rank 1 comes from generation 4"),
            std::string::npos)
      << generations.why;
  EXPECT_FALSE(PlanInheritance({From(5, 0, 3), From(5, 1, 4)}).shrink);
  const ResetPlan newcomer = PlanInheritance({From(5, 0, 3), From(-1, -1, 0)});
  EXPECT_FALSE(newcomer.shrink);
  EXPECT_NE(newcomer.why.find("rank 1 is new"), std::string::npos);
  const ResetPlan nobody = PlanInheritance({From(-1, -1, 0), From(-1, -1, 0)});
  EXPECT_FALSE(nobody.shrink);
  EXPECT_NE(nobody.why.find("no communicator"), std::string::npos)
      << nobody.why;
}

TEST(PlanInheritanceTest, AnyMemberCanTurnKeepingAndShrinkingOff) {
  Inheritance off = From(5, 1, 2);
  off.refuses = true;
  const ResetPlan plan = PlanInheritance({From(5, 0, 2), off});
  EXPECT_FALSE(plan.keep || plan.shrink);
  EXPECT_NE(plan.why.find("rank 1 turned keeping and shrinking off "
                          "(HVD_NCCL_SHRINK=0)"),
            std::string::npos)
      << plan.why;
}

TEST(PlanInheritanceTest, TheOldestNcclAmongTheMembersDecides) {
  const ResetPlan plan =
      PlanInheritance({From(5, 0, 3), From(5, 2, 3, false, 22605)});
  EXPECT_FALSE(plan.shrink);
  EXPECT_NE(plan.why.find("NCCL 22605"), std::string::npos) << plan.why;
}

// ---- Communicator over a fake seam ----

// Communicators are numbers; every call is logged. A non-blocking call
// (init, finalize, shrink) is in progress for `polls_to_finish` polls of
// State(), or forever with -1; `fail_on_poll` > 0 makes that poll report
// `failure` instead.
class FakeNccl final : public Api {
 public:
  int polls_to_finish = 2;
  int fail_on_poll = 0;
  Status failure = Status::Transport("an NCCL operation failed: remote error");
  Status init_result = Status::Ok();
  Status shrink_result = Status::Ok();
  int finalize_polls = 1;  // -1: a finalize that hangs

  int Version() const override { return kNccl228; }
  common::Result<int> DeviceCount() override { return 1; }

  Status GetUniqueId(UniqueId* id) override {
    id->bytes.fill(0);
    id->bytes[0] = 42;
    Log("id");
    return Status::Ok();
  }

  Status InitRank(int device, int nranks, const UniqueId& id, int rank,
                  Comm* comm) override {
    *comm = Make(polls_to_finish);
    Log("init " + Name(*comm) + " dev" + std::to_string(device) + " " +
        std::to_string(rank) + "/" + std::to_string(nranks) + " id" +
        std::to_string(id.bytes[0]));
    return init_result;
  }

  CommState State(Comm comm) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++polls;
    int& left = pending_[comm];
    if (fail_on_poll > 0 && polls == fail_on_poll) {
      return {CommHealth::kFailed, failure};
    }
    if (left == 0) return {CommHealth::kReady, Status::Ok()};
    if (left > 0) --left;
    return {CommHealth::kInProgress, Status::Ok()};
  }

  Status Abort(Comm comm) override {
    Log("abort " + Name(comm));
    return Status::Ok();
  }
  Status Finalize(Comm comm) override {
    Pending(comm, finalize_polls);
    Log("finalize " + Name(comm));
    return Status::Ok();
  }
  Status Destroy(Comm comm) override {
    Log("destroy " + Name(comm));
    return Status::Ok();
  }
  Status Shrink(Comm comm, const std::vector<int>& excluded, bool abort_first,
                Comm* shrunk) override {
    *shrunk = Make(polls_to_finish);
    std::string gone;
    for (int r : excluded) gone += " -" + std::to_string(r);
    Log("shrink " + Name(comm) + gone + (abort_first ? " abort" : "") + " -> " +
        Name(*shrunk));
    return shrink_result;
  }

  // The data path is fake_gpus.h's; nothing here uses it.
  common::Result<void*> Allocate(int, size_t) override { return Unused(); }
  void Free(int, void*) override {}
  common::Result<Stream> CreateStream(int) override { return Unused(); }
  void DestroyStream(int, Stream) override {}
  common::Result<Event> CreateEvent(int) override { return Unused(); }
  void DestroyEvent(int, Event) override {}
  Status Record(Event, Stream) override { return Unused(); }
  Status WaitFor(Stream, Event) override { return Unused(); }
  common::Result<bool> Done(Event) override { return Unused(); }
  Status Copy(void*, const void*, size_t, Stream) override { return Unused(); }
  Status GroupStart() override { return Unused(); }
  Status GroupEnd() override { return Unused(); }
  Status AllReduce(const void*, void*, size_t, DataType, Reduction, Comm,
                   Stream) override {
    return Unused();
  }
  Status Broadcast(const void*, void*, size_t, DataType, int, Comm,
                   Stream) override {
    return Unused();
  }
  Status AllGather(const void*, void*, size_t, DataType, Comm,
                   Stream) override {
    return Unused();
  }
  Status Reduce(const void*, void*, size_t, DataType, Reduction, int, Comm,
                Stream) override {
    return Unused();
  }
  Status ReduceScatter(const void*, void*, size_t, DataType, Reduction, Comm,
                       Stream) override {
    return Unused();
  }
  Status Send(const void*, size_t, DataType, int, Comm, Stream) override {
    return Unused();
  }
  Status Recv(void*, size_t, DataType, int, Comm, Stream) override {
    return Unused();
  }

  // A collective's launch on `comm`, in progress for `polls_left` polls.
  void StartOperation(Comm comm, int polls_left) { Pending(comm, polls_left); }

  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::atomic<int> polls{0};

 private:
  static Status Unused() {
    return Status::Internal("the life-cycle fake has no data path");
  }
  Comm Make(int polls_left) {
    std::lock_guard<std::mutex> lock(mu_);
    Comm comm = reinterpret_cast<Comm>(static_cast<uintptr_t>(++made_));
    pending_[comm] = polls_left;
    return comm;
  }
  void Pending(Comm comm, int polls_left) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[comm] = polls_left;
  }
  static std::string Name(Comm comm) {
    return "c" + std::to_string(reinterpret_cast<uintptr_t>(comm));
  }
  void Log(std::string call) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
  }

  std::mutex mu_;
  std::vector<std::string> calls_;
  std::map<Comm, int> pending_;
  uintptr_t made_ = 0;
};

// A clock that moves one second per pause between polls, so deadlines run
// out after a known number of polls and no test waits for real time.
struct FakeTime {
  Clock::time_point now{};
  CommunicatorLimits Limits() {
    CommunicatorLimits limits;
    limits.setup = seconds(5);
    limits.op = seconds(3);
    limits.now = [this] { return now; };
    limits.pause = [this] { now += seconds(1); };
    return limits;
  }
};

// Rank 0's id as the exchange hands it on; counts the exchanges.
struct LoopbackExchange {
  int calls = 0;
  UniqueId seen;
  IdExchange Function() {
    return [this](const UniqueId* made) -> common::Result<UniqueId> {
      ++calls;
      if (made != nullptr) seen = *made;
      return seen;
    };
  }
};

// A fake seam, a fake clock and rank 0's id handed on, for one test.
class CommunicatorTest : public ::testing::Test {
 protected:
  common::Result<std::unique_ptr<Communicator>> Create(int device, int rank,
                                                       int size) {
    return Communicator::Create(&nccl, exchange.Function(), "set 0", device,
                                rank, size, time.Limits());
  }

  FakeNccl nccl;
  FakeTime time;
  LoopbackExchange exchange;
};

using Calls = std::vector<std::string>;
// The fake's first communicator ("c1").
const Comm kFirst = reinterpret_cast<Comm>(uintptr_t{1});

TEST_F(CommunicatorTest, RankZeroMakesTheIdThenInitFinishesAndClosesCleanly) {
  auto comm = Create(1, 0, 4);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ(exchange.calls, 1);
  EXPECT_TRUE((*comm)->open());
  EXPECT_TRUE((*comm)->Close().ok());
  EXPECT_FALSE((*comm)->open());
  EXPECT_EQ(nccl.calls(), Calls({"id", "init c1 dev1 0/4 id42", "finalize c1",
                                 "destroy c1"}));
}

TEST_F(CommunicatorTest, OtherRanksTakeRankZerosIdAndMakeNone) {
  IdExchange from_rank_zero = [](const UniqueId* made) {
    EXPECT_EQ(made, nullptr);
    UniqueId id;
    id.bytes[0] = 7;
    return common::Result<UniqueId>(id);
  };
  auto comm = Communicator::Create(&nccl, from_rank_zero, "set 0", 0, 2, 4,
                                   time.Limits());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  comm->reset();  // the destructor closes
  EXPECT_EQ(nccl.calls(),
            Calls({"init c1 dev0 2/4 id7", "finalize c1", "destroy c1"}));
}

TEST_F(CommunicatorTest, AnInitThatNeverFinishesIsAbortedAtTheSetupDeadline) {
  nccl.polls_to_finish = -1;
  auto comm = Create(0, 0, 2);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kTimeout);
  EXPECT_NE(comm.status().message().find("NCCL init of set 0 did not finish "
                                         "within 5 s"),
            std::string::npos)
      << comm.status().ToString();
  EXPECT_EQ(nccl.calls(), Calls({"id", "init c1 dev0 0/2 id42", "abort c1"}));
  EXPECT_EQ(time.now - Clock::time_point{}, seconds(5));
}

TEST_F(CommunicatorTest, AnAsynchronousErrorAbortsAndKeepsNcclsCode) {
  nccl.polls_to_finish = -1;
  nccl.fail_on_poll = 2;
  auto comm = Create(0, 0, 2);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kTransport);
  EXPECT_NE(comm.status().message().find("remote error"), std::string::npos);
  EXPECT_EQ(nccl.calls().back(), "abort c1");
}

TEST_F(CommunicatorTest, AFailedExchangeOrInitLeavesNothingBehind) {
  IdExchange unreachable = [](const UniqueId*) {
    return common::Result<UniqueId>(
        Status::Timeout("waiting for rank 0's g3/nccl/set0.0/dev0"));
  };
  auto comm =
      Communicator::Create(&nccl, unreachable, "set 0", 0, 1, 2, time.Limits());
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kTimeout);
  EXPECT_NE(comm.status().message().find("exchanging the NCCL unique id"),
            std::string::npos);
  EXPECT_TRUE(nccl.calls().empty());

  nccl.init_result = Status::Internal("ncclCommInitRankConfig failed");
  comm = Create(0, 0, 2);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kInternal);
  EXPECT_EQ(nccl.calls().back(), "abort c1");
}

// The communicator fails, and is kept for a shrink (which ends its pending
// work) until its owner aborts it; every later wait fails at once.
TEST_F(CommunicatorTest, AnOperationPastTheOpLimitFailsItAndLaterWaitsFail) {
  auto comm = Create(0, 0, 2);
  ASSERT_TRUE(comm.ok());
  // A collective launched that never completes: a peer hung.
  nccl.StartOperation(kFirst, -1);
  const Status status = (*comm)->AwaitIdle("allreduce of 2 tensors");
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_NE(status.message().find("allreduce of 2 tensors on set 0 did not "
                                  "finish within 3 s"),
            std::string::npos)
      << status.ToString();
  EXPECT_TRUE((*comm)->failed());
  EXPECT_TRUE((*comm)->open());
  EXPECT_EQ(nccl.calls().back(), "init c1 dev0 0/2 id42");
  const int polls = nccl.polls;
  const Status later = (*comm)->AwaitIdle("broadcast");
  EXPECT_EQ(later.code(), Code::kAborted);
  EXPECT_NE(later.message().find("broadcast on set 0: the communicator "
                                 "failed earlier (allreduce of 2 tensors"),
            std::string::npos)
      << later.ToString();
  EXPECT_EQ(nccl.polls, polls) << "a failed communicator was polled again";
  EXPECT_TRUE((*comm)->Close().ok());  // no finalize: its peer hung
  EXPECT_FALSE((*comm)->open());
  EXPECT_EQ(nccl.calls().back(), "abort c1");
}

TEST_F(CommunicatorTest, AnAbortFromAnotherThreadEndsAWaitInProgress) {
  CommunicatorLimits limits;  // the real clock: the wait is long
  limits.op = std::chrono::hours(1);
  auto comm = Communicator::Create(&nccl, exchange.Function(), "set 0", 0, 0, 2,
                                   limits);
  ASSERT_TRUE(comm.ok());
  nccl.StartOperation(kFirst, -1);
  const int polls_before = nccl.polls;
  Status status;
  std::thread owner([&] { status = (*comm)->AwaitIdle("allreduce"); });
  // The owner is polling once State() has been asked again.
  const auto deadline = Clock::now() + seconds(30);
  while (nccl.polls <= polls_before + 1 && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  const bool polled = nccl.polls > polls_before + 1;
  (*comm)->RequestAbort("the driver saw worker 1 die");
  owner.join();  // before any assert, which would leave it joinable
  ASSERT_TRUE(polled) << "the owner never polled within 30 s";
  EXPECT_EQ(status.code(), Code::kAborted);
  EXPECT_NE(status.message().find("worker 1 die"), std::string::npos);
  EXPECT_TRUE((*comm)->failed());
  comm->reset();  // the owner gives it up: an abort, not a finalize
  EXPECT_EQ(nccl.calls().back(), "abort c1");
}

TEST_F(CommunicatorTest, AnAbortAskedForBeforeAWaitEndsTheNextOne) {
  auto comm = Create(0, 0, 2);
  ASSERT_TRUE(comm.ok());
  (*comm)->RequestAbort("reset to generation 4");
  const Status status = (*comm)->AwaitIdle("allreduce");
  EXPECT_EQ(status.code(), Code::kAborted);
  EXPECT_TRUE((*comm)->failed());
}

TEST_F(CommunicatorTest, AFinalizeThatHangsIsAbortedWithinTheOpLimit) {
  nccl.finalize_polls = -1;
  auto comm = Create(0, 0, 2);
  ASSERT_TRUE(comm.ok());
  const Status status = (*comm)->Close();
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_NE(status.message().find("NCCL finalize of set 0"), std::string::npos);
  EXPECT_EQ(nccl.calls(),
            Calls({"id", "init c1 dev0 0/2 id42", "finalize c1", "abort c1"}));
}

// After a peer's death the survivors shrink the failed communicator, NCCL
// ending its pending work first (NCCL_SHRINK_ABORT).
TEST_F(CommunicatorTest, AFailedCommunicatorShrinksRenumberingTheSurvivors) {
  auto parent = Create(1, 2, 4);
  ASSERT_TRUE(parent.ok());
  nccl.StartOperation(kFirst, -1);
  ASSERT_EQ((*parent)->AwaitIdle("allreduce").code(), Code::kTimeout);
  auto child = (*parent)->Shrink({1}, /*abort_first=*/true);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ((*child)->rank(), 1);
  EXPECT_EQ((*child)->size(), 3);
  EXPECT_EQ((*child)->device(), 1);
  EXPECT_FALSE((*child)->failed());
  EXPECT_FALSE((*parent)->open());
  EXPECT_TRUE((*child)->Close().ok());
  EXPECT_EQ(nccl.calls(),
            Calls({"init c1 dev1 2/4 id0", "shrink c1 -1 abort -> c2",
                   "abort c1", "finalize c2", "destroy c2"}));
}

TEST_F(CommunicatorTest, AFailedShrinkAbortsBothAndSaysSo) {
  auto parent = Create(0, 0, 3);
  ASSERT_TRUE(parent.ok());
  nccl.shrink_result = Status::Transport("ncclCommShrink failed: remote error");
  auto child = (*parent)->Shrink({2}, /*abort_first=*/false);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), Code::kTransport);
  EXPECT_NE(child.status().message().find("shrinking NCCL communicator set 0"),
            std::string::npos);
  EXPECT_FALSE((*parent)->open());
  EXPECT_EQ(nccl.calls(),
            Calls({"id", "init c1 dev0 0/3 id42", "shrink c1 -2 -> c2",
                   "abort c2", "abort c1"}));
}

// Through a real rendezvous server: rank 0's id reaches a member that
// waits for it, and only within its generation.
TEST(IdExchangeTest, RankZerosIdReachesTheMembersOfItsGenerationOnly) {
  EXPECT_EQ(IdKey(3, "set0.0/n0"), "g3/nccl/set0.0/n0");
  rendezvous::ServerOptions options;
  options.secret = "nccl-id-exchange-test";
  auto server = rendezvous::RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  RuntimeConfig config;
  config.rendezvous_addr = "127.0.0.1";
  config.rendezvous_port = (*server)->port();
  hvd::testing::GiveWorkerKey(config, options.secret, 1);
  config.start_timeout = seconds(20);

  UniqueId made;
  for (size_t i = 0; i < made.bytes.size(); ++i) {
    made.bytes[i] = static_cast<char>(i * 7);
  }
  common::Result<UniqueId> got = Status::Internal("not run");
  std::thread member(
      [&] { got = StoreIdExchange(config, 3, "set0.0/n0")(nullptr); });
  auto published = StoreIdExchange(config, 3, "set0.0/n0")(&made);
  member.join();
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes, made.bytes);

  config.start_timeout = milliseconds(300);
  auto next_generation = StoreIdExchange(config, 4, "set0.0/n0")(nullptr);
  ASSERT_FALSE(next_generation.ok());
  EXPECT_NE(next_generation.status().message().find("g4/nccl/set0.0/n0"),
            std::string::npos)
      << next_generation.status().ToString();

  config.worker_key = "not this worker's key";
  auto stranger = StoreIdExchange(config, 3, "set0.0/n0")(nullptr);
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.status().code(), Code::kUnauthenticated)
      << stranger.status().ToString();
}

// Through a real etcd (--rendezvous-backend etcd): the id goes where the
// Gloo keys go, sealed, and no hvdrun's server is asked (there is none
// here), so a takeover of the job does not touch it.
TEST(IdExchangeTest, WithEtcdTheIdGoesThroughEtcdSealed) {
  testing::EtcdMember member;
  ASSERT_NO_FATAL_FAILURE(member.Start());
  RuntimeConfig config;
  config.etcd = member.ClientOptions();
  config.etcd_prefix = "/hvd/jobs/nccl-id/";
  config.generations_key = "nccl-id-exchange-etcd-test";
  config.start_timeout = seconds(20);

  UniqueId made;
  for (size_t i = 0; i < made.bytes.size(); ++i) {
    made.bytes[i] = static_cast<char>(i * 5 + 1);
  }
  common::Result<UniqueId> got = Status::Internal("not run");
  std::thread member_rank(
      [&] { got = StoreIdExchange(config, 2, "set0.0/dev1")(nullptr); });
  auto published = StoreIdExchange(config, 2, "set0.0/dev1")(&made);
  member_rank.join();
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes, made.bytes);

  // In etcd under the job's Gloo keys (which hvdrun forgets by
  // generation); sealed: a reader without the generation's key is refused
  // (below).
  rendezvous::EtcdClient etcd(*config.etcd);
  auto stored = etcd.Range("/hvd/jobs/nccl-id/gloo/g2/nccl/set0.0/dev1");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->size(), 1u);

  config.start_timeout = milliseconds(300);
  auto next_generation = StoreIdExchange(config, 3, "set0.0/dev1")(nullptr);
  ASSERT_FALSE(next_generation.ok());
  EXPECT_NE(next_generation.status().message().find("g3/nccl/set0.0/dev1"),
            std::string::npos)
      << next_generation.status().ToString();

  config.start_timeout = seconds(5);
  config.generations_key = "not the job's";
  auto stranger = StoreIdExchange(config, 2, "set0.0/dev1")(nullptr);
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.status().code(), Code::kUnauthenticated)
      << stranger.status().ToString();
  // A member of generation 3 alone holds no key for generation 2.
  config.generations_key.clear();
  config.generation_key =
      common::GenerationKey("nccl-id-exchange-etcd-test", 3);
  config.generation_key_of = 3;
  auto other_generation = StoreIdExchange(config, 2, "set0.0/dev1")(nullptr);
  ASSERT_FALSE(other_generation.ok());
  EXPECT_EQ(other_generation.status().code(), Code::kPermissionDenied)
      << other_generation.status().ToString();
}

// The real seam on this machine: with NCCL built, the libraries load and
// the device count is the GPU driver's answer, an error naming the cause
// where there is no GPU (no /dev/nvidia0); without NCCL, an error that
// says how to build it.
TEST(SystemApiTest, LoadsNcclAndNamesWhyThereIsNoDevice) {
  auto api = SystemApi();
  if (BuiltNcclVersion() == 0) {
    ASSERT_FALSE(api.ok());
    EXPECT_NE(api.status().message().find("HVD_WITH_NCCL=on"),
              std::string::npos);
    return;
  }
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_GE((*api)->Version(), 22700);
  const auto count = (*api)->DeviceCount();
  if (access("/dev/nvidia0", F_OK) == 0) {
    ASSERT_TRUE(count.ok()) << count.status().ToString();
    EXPECT_GE(*count, 1);
  } else {
    ASSERT_FALSE(count.ok());
    EXPECT_NE(count.status().message().find(
                  "no CUDA device is usable here: cudaGetDeviceCount says"),
              std::string::npos)
        << count.status().ToString();
  }
}

}  // namespace
}  // namespace hvd::runtime::nccl
