// ElasticWorker against an in-process rendezvous server and real
// notification clients: check-in for each generation, the sync flag, the
// pending HostsUpdated, Abort routed to the current generation's Runtime
// only, a notification server that survives runtime resets, and each
// generation's rank 0 marking the generation on one timeline.
#include "hvd/runtime/elastic_worker.h"
#include "runtime/worker_key_for_tests.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hvd/notify/client.h"
#include "hvd/rendezvous/server.h"
#include "hvd/runtime/runtime.h"

namespace hvd::runtime {
namespace {

using common::Code;
using common::Result;
using common::Status;
using namespace std::chrono_literals;

constexpr char kSecret[] = "elastic-worker-test-secret";
constexpr char kHost[] = "127.0.0.1";

// Waits up to 30 s for `done`; false if it never held.
bool WaitFor(const std::function<bool()>& done) {
  auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Slots 127.0.0.1:<local rank>; `ranks[i]` is slot i's rank.
rendezvous::GenerationPlan Plan(int64_t generation, std::vector<int> ranks,
                                bool sync) {
  rendezvous::GenerationPlan plan;
  plan.generation = generation;
  const int size = static_cast<int>(ranks.size());
  for (int slot = 0; slot < size; ++slot) {
    rendezvous::WorkerAssignment a;
    a.generation = generation;
    a.layout.rank = ranks[slot];
    a.layout.size = size;
    a.layout.local_rank = ranks[slot];
    a.layout.local_size = size;
    a.layout.cross_rank = 0;
    a.layout.cross_size = 1;
    a.sync = sync;
    plan.slots[rendezvous::SlotName(kHost, slot)] = a;
  }
  return plan;
}

class ElasticWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rendezvous::ServerOptions options;
    options.secret = kSecret;
    options.threads = 32;
    auto server = rendezvous::RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  static int64_t WorkerIdOf(int slot) { return 100 + slot; }
  // What hvdrun signs its notifications to `slot`'s worker with.
  static std::string KeyOf(int slot) {
    return common::WorkerKey(
        kSecret, {WorkerIdOf(slot), rendezvous::SlotName(kHost, slot)});
  }

  RuntimeConfig Config(int slot, std::chrono::milliseconds gloo_timeout = 60s) {
    RuntimeConfig config;
    config.hostname = kHost;
    config.layout.local_rank = slot;
    config.rendezvous_addr = kHost;
    config.rendezvous_port = server_->port();
    hvd::testing::GiveWorkerKey(config, kSecret, WorkerIdOf(slot));
    config.elastic = true;
    config.start_timeout = 30s;
    config.gloo_timeout = gloo_timeout;
    config.cycle_time = cycle_time_;
    config.stall_check = false;
    config.timeline = timeline_;
    return config;
  }

  // Every worker checks in, starts its runtime and attaches it, each on its
  // own thread (the check-in is a barrier). Returns the runtimes by slot.
  std::vector<std::shared_ptr<Runtime>> JoinAll(
      const std::vector<std::unique_ptr<ElasticWorker>>& workers) {
    const size_t n = workers.size();
    std::vector<Result<JoinedGeneration>> joined(n, Status::Internal("unset"));
    std::vector<std::shared_ptr<Runtime>> runtimes(n);
    std::vector<Status> errors(n);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        const int slot = static_cast<int>(i);
        joined[i] = workers[i]->JoinNext(Config(slot, gloo_timeout_[slot]));
        if (!joined[i].ok()) {
          errors[i] = joined[i].status();
          return;
        }
        auto started = Runtime::Start(
            joined[i]->config, joined[i]->generation, {}, nullptr,
            GenerationInfo{joined[i]->reason, joined[i]->hosts});
        if (!started.ok()) {
          errors[i] = started.status();
          return;
        }
        runtimes[i] = std::move(*started);
        errors[i] = workers[i]->Attach(runtimes[i], joined[i]->generation);
      });
    }
    for (auto& thread : threads) thread.join();
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(errors[i].ok())
          << "slot " << i << ": " << errors[i].ToString();
    }
    return runtimes;
  }

  std::unique_ptr<rendezvous::RendezvousServer> server_;
  std::chrono::milliseconds gloo_timeout_[2] = {60s, 60s};  // by slot
  std::chrono::microseconds cycle_time_{1000};
  std::string timeline_;  // HOROVOD_TIMELINE of every worker
};

std::vector<std::unique_ptr<ElasticWorker>> StartWorkers(
    const std::vector<RuntimeConfig>& configs) {
  std::vector<std::unique_ptr<ElasticWorker>> workers;
  for (const auto& config : configs) {
    auto worker = ElasticWorker::Start(config);
    EXPECT_TRUE(worker.ok()) << worker.status().ToString();
    if (worker.ok()) workers.push_back(std::move(*worker));
  }
  return workers;
}

TEST_F(ElasticWorkerTest, JoinsGenerationsAcrossAResetWithOneServer) {
  auto workers = StartWorkers({Config(0), Config(1)});
  ASSERT_EQ(workers.size(), 2u);
  const std::string address0 = workers[0]->notify_address();
  EXPECT_EQ(workers[0]->generation(), 0);
  EXPECT_TRUE(workers[0]->sync());  // before the first generation

  ASSERT_TRUE(server_->board().Publish(Plan(1, {0, 1}, false)).ok());
  auto runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);
  EXPECT_EQ(runtimes[1]->config().layout.rank, 1);
  EXPECT_EQ(runtimes[1]->config().layout.size, 2);
  for (const auto& worker : workers) {
    EXPECT_EQ(worker->generation(), 1);
    EXPECT_FALSE(worker->sync());
  }
  // The check-in registered each worker's notification server.
  auto addresses = server_->board().NotifyAddresses();
  EXPECT_EQ(addresses[rendezvous::SlotName(kHost, 0)], address0);
  EXPECT_EQ(addresses[rendezvous::SlotName(kHost, 1)],
            workers[1]->notify_address());

  // A HostsUpdated announcing generation 2 is pending until it is joined.
  EXPECT_EQ(workers[0]->PendingHostsUpdate(), 0);
  notify::HostsUpdated update;
  update.generation = 2;
  update.sequence = 1;
  update.added = {"127.0.0.2"};
  // Only the worker's own key signs what it takes: not the job secret, not
  // another worker's.
  for (const std::string& other : {std::string(kSecret), KeyOf(1)}) {
    EXPECT_EQ(notify::SendHostsUpdated(address0, other, update, 10s).code(),
              common::Code::kUnauthenticated);
  }
  EXPECT_EQ(workers[0]->PendingHostsUpdate(), 0);
  ASSERT_TRUE(notify::SendHostsUpdated(address0, KeyOf(0), update, 10s).ok());
  ASSERT_TRUE(WaitFor([&] { return workers[0]->PendingHostsUpdate() == 2; }));
  EXPECT_EQ(workers[1]->PendingHostsUpdate(), 0);

  // The reset: the runtimes go, the workers (and their servers) stay.
  for (auto& runtime : runtimes) runtime->Shutdown();
  runtimes.clear();
  ASSERT_TRUE(server_->board().Publish(Plan(2, {1, 0}, true)).ok());
  runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);
  EXPECT_EQ(runtimes[0]->config().layout.rank, 1);
  EXPECT_EQ(runtimes[1]->config().layout.rank, 0);
  for (const auto& worker : workers) {
    EXPECT_EQ(worker->generation(), 2);
    EXPECT_TRUE(worker->sync());
    EXPECT_EQ(worker->PendingHostsUpdate(), 0);
  }
  EXPECT_EQ(workers[0]->notify_address(), address0);
  for (auto& runtime : runtimes) runtime->Shutdown();
}

// The membership events of the trace at `path`.
std::vector<nlohmann::json> MembershipEvents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto trace = nlohmann::json::parse(text.str(), nullptr, false);
  EXPECT_TRUE(trace.is_array()) << text.str();
  std::vector<nlohmann::json> events;
  if (!trace.is_array()) return events;
  int64_t row = -1;
  for (const auto& e : trace) {
    if (e.value("name", "") == "process_name" &&
        e["args"].value("name", "") == "membership") {
      row = e["pid"].get<int64_t>();
    }
  }
  for (const auto& e : trace) {
    if (e["pid"] == row && e.value("ph", "") == "i") events.push_back(e);
  }
  return events;
}

// Each generation's rank 0 (slot 0, then slot 1: another process in a
// real job) marks the generation's start in the one file, with the reason
// and hosts the driver gave; a runtime's shutdown closes the file for the
// next one.
TEST_F(ElasticWorkerTest, EachGenerationsRankZeroMarksItOnOneTimeline) {
  timeline_ = ::testing::TempDir() + "elastic_worker_test_timeline.json";
  std::remove(timeline_.c_str());
  auto workers = StartWorkers({Config(0), Config(1)});
  ASSERT_EQ(workers.size(), 2u);
  rendezvous::GenerationPlan first = Plan(1, {0, 1}, true);
  first.reason = "start";
  first.hosts = {"127.0.0.1:2"};
  ASSERT_TRUE(server_->board().Publish(first).ok());
  auto runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);
  for (auto& runtime : runtimes) runtime->Shutdown();
  // Shut down, not yet destroyed: the file is complete.
  auto events = MembershipEvents(timeline_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["name"], "generation 1: 2 ranks");

  runtimes.clear();
  rendezvous::GenerationPlan second = Plan(2, {1, 0}, true);
  second.reason = "slot 127.0.0.2:0 failed; host 127.0.0.2 blacklisted";
  second.hosts = {"127.0.0.1:2"};
  ASSERT_TRUE(server_->board().Publish(second).ok());
  runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);
  EXPECT_EQ(runtimes[1]->config().layout.rank, 0);
  for (auto& runtime : runtimes) runtime->Shutdown();
  events = MembershipEvents(timeline_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["args"]["generation"], 1);
  EXPECT_EQ(events[0]["args"]["reason"], "start");
  EXPECT_EQ(events[1]["args"], (nlohmann::json{{"generation", 2},
                                               {"size", 2},
                                               {"hosts", {"127.0.0.1:2"}},
                                               {"reason", second.reason}}));
  EXPECT_EQ(events[1]["s"], "g");
  std::remove(timeline_.c_str());
}

// Slot 0 waits in an allreduce that slot 1 never joins: only an Abort of
// the current generation ends it, and as a broken connection (kTransport),
// not at its 60 s Gloo timeout.
// Debian's Gloo does not wake a send that is in progress when its socket is
// shut down (it waits out the Gloo timeout), only receives (docs/design.md,
// "Abort"). A worker whose peer hangs waits in a receive; here slot 1 does
// not hang but keeps negotiating, so the loops run slow cycles (100 ms):
// slot 0 then waits in its receive from slot 1 nearly all the time, as it
// would from a hung peer, instead of also sending every millisecond. Slot
// 1's shorter timeout bounds its own shutdown, whose send to the aborted
// peer may wait out that timeout for the same reason.
TEST_F(ElasticWorkerTest, AbortReachesOnlyTheCurrentGenerationsRuntime) {
  gloo_timeout_[1] = 10s;
  cycle_time_ = 100ms;
  auto workers = StartWorkers({Config(0), Config(1)});
  ASSERT_EQ(workers.size(), 2u);
  ASSERT_TRUE(server_->board().Publish(Plan(1, {0, 1}, false)).ok());
  auto runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);
  for (auto& runtime : runtimes) runtime->Shutdown();
  ASSERT_TRUE(server_->board().Publish(Plan(2, {0, 1}, false)).ok());
  runtimes = JoinAll(workers);
  ASSERT_TRUE(runtimes[0] && runtimes[1]);

  std::vector<float> data(4, 1.0f);
  TensorSpec spec;
  spec.name = "lonely";
  spec.shape = {4};
  auto handle = runtimes[0]->Allreduce(spec, data.data(), data.data(), {});
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();

  const std::string address = workers[0]->notify_address();
  for (int64_t stale : {1, 3}) {
    notify::Abort abort{stale, "test: wrong generation"};
    ASSERT_TRUE(notify::SendAbort(address, KeyOf(0), abort, 10s).ok());
  }
  auto done = runtimes[0]->Poll(*handle);
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done) << "an Abort of another generation reached the runtime";

  notify::Abort abort{2, "test: a peer died"};
  ASSERT_TRUE(notify::SendAbort(address, KeyOf(0), abort, 10s).ok());
  ASSERT_TRUE(WaitFor([&] { return *runtimes[0]->Poll(*handle); }))
      << "the Abort of generation 2 did not end the collective";
  auto result = runtimes[0]->Wait(*handle);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->status.code(), Code::kTransport)
      << result->status.ToString();
  for (auto& runtime : runtimes) runtime->Shutdown();
}

TEST_F(ElasticWorkerTest, RemovedSlotIsNotFound) {
  auto workers = StartWorkers({Config(1)});
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_TRUE(server_->board().Publish(Plan(1, {0}, true)).ok());
  auto joined = workers[0]->JoinNext(Config(1));
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.status().code(), Code::kNotFound)
      << joined.status().ToString();
  EXPECT_EQ(workers[0]->generation(), 0);
}

}  // namespace
}  // namespace hvd::runtime
