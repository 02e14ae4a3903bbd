// The check-in route (/v1/elastic/checkin) through the real server and the
// typed client over HTTP on loopback: the barrier's answer, removed slots,
// timeouts, malformed and unsigned requests, and Stop() during a wait.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "hvd/common/hmac.h"
#include "hvd/rendezvous/client.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/server.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::rendezvous {
namespace {

using common::Code;
using common::Result;
using common::Status;
using namespace std::chrono_literals;

constexpr char kSecret[] = "checkin-test-secret";

GenerationPlan Plan(int64_t generation, const std::vector<std::string>& hosts,
                    bool sync = true) {
  GenerationPlan plan;
  plan.generation = generation;
  const int size = static_cast<int>(hosts.size());
  for (int h = 0; h < size; ++h) {
    WorkerAssignment a;
    a.generation = generation;
    a.layout.rank = h;
    a.layout.size = size;
    a.layout.local_rank = 0;
    a.layout.local_size = 1;
    a.layout.cross_rank = h;
    a.layout.cross_size = size;
    a.sync = sync;
    plan.slots[SlotName(hosts[h], 0)] = a;
  }
  return plan;
}

class CheckInTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.secret = kSecret;
    options.max_wait = 60s;
    options.threads = 16;
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  common::HttpClientOptions ClientOptions(const std::string& secret = kSecret) {
    common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.secret = secret;
    return options;
  }

  // One GET, signed (or not) by hand, never retried.
  httplib::Result Raw(const std::string& target, bool sign = true) {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_url_encode(false);
    client.set_read_timeout(30s);
    httplib::Request request;
    request.method = "GET";
    request.path = target;
    if (sign) {
      auto headers = common::SignNewRequest(kSecret, "GET", target, "",
                                            common::WallClockMs());
      EXPECT_TRUE(headers.ok());
      for (const auto& [name, value] : headers->Fields()) {
        request.set_header(name, value);
      }
    }
    return client.send(request);
  }

  // Returns once `slot` has checked in for the newest generation (or fails
  // after 10 s), so a test knows the request is parked in its wait.
  void AwaitCheckedIn(const std::string& slot) {
    auto missing = [&] {
      for (const auto& s : server_->board().Missing()) {
        if (s == slot) return true;
      }
      return false;
    };
    auto give_up = std::chrono::steady_clock::now() + 10s;
    while (missing() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_FALSE(missing()) << slot << " never checked in";
  }

  // Returns once `count` check-ins are blocked in the board's wait (or
  // fails after 10 s), so that what the test does next happens during it.
  void AwaitWaiting(int count) {
    auto give_up = std::chrono::steady_clock::now() + 10s;
    while (server_->board().waiting() < count &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GE(server_->board().waiting(), count)
        << "check-ins never waited on the board";
  }

  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(CheckInTest, SingleSlotGetsItsAssignment) {
  ASSERT_TRUE(server_->board().Publish(Plan(3, {"a"}, /*sync=*/false)).ok());
  RendezvousClient client(ClientOptions());
  auto result = client.CheckIn("a:0", 0, "127.0.0.1:4567", 5s);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->generation, 3);
  EXPECT_EQ(result->layout.rank, 0);
  EXPECT_EQ(result->layout.size, 1);
  EXPECT_EQ(result->layout.local_size, 1);
  EXPECT_EQ(result->layout.cross_size, 1);
  EXPECT_FALSE(result->sync);
  // The notification address travelled URL-encoded and arrived intact.
  EXPECT_EQ(server_->board().NotifyAddresses(),
            (std::map<std::string, std::string>{{"a:0", "127.0.0.1:4567"}}));
}

TEST_F(CheckInTest, RawAnswerIsTheAssignmentJson) {
  ASSERT_TRUE(server_->board().Publish(Plan(2, {"a"})).ok());
  auto res = Raw(std::string(protocol::kCheckInPath) +
                 "?slot=a%3A0&after=1&wait_ms=5000");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  auto json = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_TRUE(json.is_object()) << res->body;
  EXPECT_EQ(json["generation"], 2);
  EXPECT_EQ(json["rank"], 0);
  EXPECT_EQ(json["sync"], true);
  auto decoded = DecodeAssignment(res->body);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->generation, 2);
}

TEST_F(CheckInTest, ThreeWorkersAnswerTogether) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a", "b", "c"})).ok());
  const std::vector<std::string> slots = {"a:0", "b:0", "c:0"};
  std::vector<Result<WorkerAssignment>> results(3, Status::Internal("unset"));
  std::atomic<int> answered{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 2; ++i) {
    workers.emplace_back([&, i] {
      RendezvousClient client(ClientOptions());
      results[i] = client.CheckIn(slots[i], 0, "", 30s);
      ++answered;
    });
  }
  AwaitCheckedIn("a:0");
  AwaitCheckedIn("b:0");
  EXPECT_EQ(answered, 0);
  RendezvousClient last(ClientOptions());
  results[2] = last.CheckIn("c:0", 0, "", 30s);
  for (auto& t : workers) t.join();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(results[i].ok())
        << slots[i] << ": " << results[i].status().ToString();
    EXPECT_EQ(results[i]->layout.rank, i);
    EXPECT_EQ(results[i]->layout.size, 3);
    EXPECT_EQ(results[i]->generation, 1);
  }
}

TEST_F(CheckInTest, RemovedSlotIs404NotFound) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a", "b"})).ok());
  ASSERT_TRUE(server_->board().Publish(Plan(2, {"a"})).ok());
  RendezvousClient client(ClientOptions());
  auto removed = client.CheckIn("b:0", 1, "", 5s);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), Code::kNotFound);
  EXPECT_NE(removed.status().message().find("404"), std::string::npos);
  // The server's own message reaches the worker.
  EXPECT_NE(removed.status().message().find("removed from the job"),
            std::string::npos)
      << removed.status().ToString();
  auto raw = Raw(std::string(protocol::kCheckInPath) +
                 "?slot=b%3A0&after=1&wait_ms=100");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 404);
}

TEST_F(CheckInTest, AnotherProcessesSlotIs404AndTheIdTravels) {
  GenerationPlan plan = Plan(1, {"a"});
  plan.workers = {{"a:0", 5}};
  ASSERT_TRUE(server_->board().Publish(plan).ok());
  RendezvousClient client(ClientOptions());
  auto stale = client.CheckIn("a:0", 0, "", 5s, 4);
  EXPECT_EQ(stale.status().code(), Code::kNotFound);
  EXPECT_NE(stale.status().message().find("not part of the job"),
            std::string::npos)
      << stale.status().ToString();
  auto own = client.CheckIn("a:0", 0, "", 5s, 5);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  auto bad = Raw(std::string(protocol::kCheckInPath) +
                 "?slot=a%3A0&after=0&wait_ms=100&worker=five");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
}

TEST_F(CheckInTest, IncompleteBarrierIs408Timeout) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a", "b"})).ok());
  RendezvousClient client(ClientOptions());
  auto started = std::chrono::steady_clock::now();
  auto result = client.CheckIn("a:0", 0, "", 100ms);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_NE(result.status().message().find("408"), std::string::npos);
  EXPECT_NE(result.status().message().find("1 of 2 slots"), std::string::npos)
      << result.status().ToString();
  EXPECT_GE(elapsed, 100ms);
  EXPECT_LT(elapsed, 5s);
  // The timed-out check-in still counts: b completes the barrier, and a's
  // next check-in answers at once.
  EXPECT_EQ(server_->board().Missing(), std::vector<std::string>{"b:0"});
  RendezvousClient b(ClientOptions());
  auto b_result = b.CheckIn("b:0", 0, "", 5s);
  ASSERT_TRUE(b_result.ok()) << b_result.status().ToString();
  EXPECT_EQ(b_result->layout.rank, 1);
  auto again = client.CheckIn("a:0", 0, "", 5s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->layout.rank, 0);
}

TEST_F(CheckInTest, NoGenerationYetIs408) {
  RendezvousClient client(ClientOptions());
  auto result = client.CheckIn("a:0", 0, "", 50ms);
  EXPECT_EQ(result.status().code(), Code::kTimeout)
      << result.status().ToString();
}

TEST_F(CheckInTest, PublishDuringTheWaitAnswersIt) {
  RendezvousClient client(ClientOptions());
  Result<WorkerAssignment> result = Status::Internal("unset");
  std::thread waiter([&] { result = client.CheckIn("a:0", 0, "", 30s); });
  // The request waits on the board for a first generation when the plan
  // is published.
  AwaitWaiting(1);
  EXPECT_EQ(server_->board().generation(), 0);
  EXPECT_TRUE(server_->board().Publish(Plan(5, {"a"})).ok());
  waiter.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->generation, 5);
}

TEST_F(CheckInTest, MissingSlotOrBadParametersAre400) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a"})).ok());
  const std::string path = protocol::kCheckInPath;
  for (const std::string& query : std::vector<std::string>{
           "?after=0&wait_ms=10", "?slot=&after=0&wait_ms=10",
           "?slot=a%3A0&wait_ms=10", "?slot=a%3A0&after=&wait_ms=10",
           "?slot=a%3A0&after=soon&wait_ms=10",
           "?slot=a%3A0&after=-1&wait_ms=10",
           "?slot=a%3A0&after=0&wait_ms=later",
           "?slot=a%3A0&after=0&wait_ms=99999999",
           "?slot=" + std::string(600, 's') + "&after=0&wait_ms=10"}) {
    auto res = Raw(path + query);
    ASSERT_TRUE(res) << query;
    EXPECT_EQ(res->status, 400) << query << " " << res->body;
    auto json = nlohmann::json::parse(res->body, nullptr, false);
    EXPECT_TRUE(json.is_object() && json.contains("message")) << res->body;
  }
  // None of them checked a:0 in.
  EXPECT_EQ(server_->board().Missing(), std::vector<std::string>{"a:0"});
  // The typed client's own bad `after` comes back as kInvalidArgument.
  RendezvousClient client(ClientOptions());
  EXPECT_EQ(client.CheckIn("a:0", -1, "", 10ms).status().code(),
            Code::kInvalidArgument);
  // The server still serves.
  auto ok = client.CheckIn("a:0", 0, "", 5s);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST_F(CheckInTest, UnsignedOrWronglySignedIs401) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a"})).ok());
  auto unsigned_request = Raw(
      std::string(protocol::kCheckInPath) + "?slot=a%3A0&after=0&wait_ms=10",
      /*sign=*/false);
  ASSERT_TRUE(unsigned_request);
  EXPECT_EQ(unsigned_request->status, 401);
  RendezvousClient intruder(ClientOptions("not-the-secret"));
  auto refused = intruder.CheckIn("a:0", 0, "evil:1", 10ms);
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated)
      << refused.status().ToString();
  // Neither checked the slot in or left an address.
  EXPECT_EQ(server_->board().Missing(), std::vector<std::string>{"a:0"});
  EXPECT_TRUE(server_->board().NotifyAddresses().empty());
}

TEST_F(CheckInTest, StopDuringAWaitAnswersPromptly) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a", "b"})).ok());
  std::optional<httplib::Result> raw;
  std::thread raw_waiter([&] {
    raw.emplace(Raw(std::string(protocol::kCheckInPath) +
                    "?slot=a%3A0&after=0&wait_ms=60000"));
  });
  AwaitCheckedIn("a:0");
  auto started = std::chrono::steady_clock::now();
  server_->Stop();
  raw_waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  // The board closes before the HTTP server stops, so the parked request
  // gets its 503 before the connection goes: never a 60 s hang.
  ASSERT_TRUE(raw.has_value());
  ASSERT_TRUE(*raw) << httplib::to_string(raw->error());
  EXPECT_EQ((*raw)->status, 503) << (*raw)->body;
  EXPECT_NE((*raw)->body.find("\"aborted\""), std::string::npos)
      << (*raw)->body;
}

TEST_F(CheckInTest, TypedClientSeesStopAsAbortedOrTransport) {
  ASSERT_TRUE(server_->board().Publish(Plan(1, {"a", "b"})).ok());
  common::HttpClientOptions options = ClientOptions();
  options.max_attempts = 2;
  options.connect_timeout = 1s;
  RendezvousClient client(options);
  Result<WorkerAssignment> result = Status::Internal("unset");
  std::thread waiter([&] { result = client.CheckIn("a:0", 0, "", 60s); });
  AwaitCheckedIn("a:0");
  auto started = std::chrono::steady_clock::now();
  server_->Stop();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.status().code() == Code::kAborted ||
              result.status().code() == Code::kTransport)
      << result.status().ToString();
}

}  // namespace
}  // namespace hvd::rendezvous
