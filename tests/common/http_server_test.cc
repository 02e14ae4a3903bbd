// SignedHttpServer over real sockets on loopback, attacked the ways issue 11
// measured: slowloris, huge unauthenticated bodies, endless headers,
// replays, garbage, floods of refusals. Deadlines are short here so that
// the tests are quick; every wait for the server has a generous bound.
#include "hvd/common/http_server.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "hvd/common/hmac.h"
#include "hvd/common/http_client.h"
#include "hvd/common/worker_key.h"
#include "raw_socket.h"

namespace hvd::common {
namespace {

using namespace std::chrono_literals;
using testing::RawSocket;
using testing::SignedRequestBytes;
using testing::Slowloris;
using testing::StatusOf;

constexpr char kSecret[] = "server-test-secret";

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(); }
  void TearDown() override {
    if (server_) server_->Stop();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("off"));
  }

  virtual void Adjust(HttpServerOptions&) {}

  void StartServer() {
    HttpServerOptions options;
    options.name = "test server";
    options.secret = kSecret;
    options.handler_threads = 4;
    options.limits.body_bytes = 64 * 1024;
    options.limits.header_deadline = 1500ms;
    options.limits.body_deadline = 1500ms;
    options.limits.unauthenticated_idle = 800ms;
    Adjust(options);
    auto server = SignedHttpServer::Start(options, [this](
                                                       const HttpRequest& req) {
      ++handled_;
      if (req.path == "/throw") throw std::runtime_error("handler bug");
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [name, value] : req.params) params[name] = value;
      nlohmann::json echo{{"method", req.method},
                          {"path", req.path},
                          {"params", params},
                          {"body", req.body},
                          {"worker", req.worker ? req.worker->Header() : ""}};
      return HttpAnswer::Json(
          echo.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    });
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  HttpClientOptions ClientOptions() {
    HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.secret = kSecret;
    options.max_attempts = 1;
    options.read_timeout = 10s;
    return options;
  }

  // One signed request on a fresh client; its status, or -1.
  int SignedGet(const std::string& target = "/ok") {
    HttpClient client(ClientOptions());
    auto response = client.Send("GET", target);
    return response.ok() ? response->status : -1;
  }

  // Records what a server started after this call logs, for the
  // refusal-rate test.
  std::shared_ptr<std::ostringstream> CaptureLog() {
    auto out = std::make_shared<std::ostringstream>();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
    captured_ = out;
    return out;
  }

  std::unique_ptr<SignedHttpServer> server_;
  std::atomic<int> handled_{0};
  std::shared_ptr<std::ostringstream> captured_;
};

int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) ++count;
  }
  return count;
}

TEST_F(HttpServerTest, SignedRequestReachesTheHandlerDecoded) {
  HttpClient client(ClientOptions());
  auto response =
      client.Send("PUT", "/a%2Fb/c?x=1&y=two+words&z=%41&flag", "payload");
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->status, 200) << response->body;
  auto echo = nlohmann::json::parse(response->body);
  EXPECT_EQ(echo["method"], "PUT");
  EXPECT_EQ(echo["path"], "/a/b/c");
  EXPECT_EQ(echo["params"]["x"], "1");
  EXPECT_EQ(echo["params"]["y"], "two words");
  EXPECT_EQ(echo["params"]["z"], "A");
  EXPECT_EQ(echo["params"]["flag"], "");
  EXPECT_EQ(echo["body"], "payload");
  // The client keeps its connection: a second request reuses it.
  auto again = client.Send("GET", "/again");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, 200);
  HttpServerCounters counters = server_->counters();
  EXPECT_EQ(counters.ok_2xx, 2u);
  // Both handler runs were timed.
  uint64_t timed = 0;
  for (uint64_t count : counters.handler_seconds) timed += count;
  EXPECT_EQ(timed, 2u);
  EXPECT_GE(counters.handler_seconds_sum, 0.0);
}

TEST_F(HttpServerTest, UnsignedWrongAndStaleRequestsAre401AndNeverHandled) {
  RawSocket unsigned_request(server_->port());
  ASSERT_TRUE(unsigned_request.Send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(StatusOf(unsigned_request.ReadAnswer(10s)), 401);
  RawSocket wrong(server_->port());
  ASSERT_TRUE(wrong.Send(SignedRequestBytes("not-the-secret", "GET", "/ok")));
  EXPECT_EQ(StatusOf(wrong.ReadAnswer(10s)), 401);
  RawSocket stale(server_->port());
  ASSERT_TRUE(stale.Send(SignedRequestBytes(kSecret, "GET", "/ok", "", "",
                                            WallClockMs() - 3600 * 1000)));
  std::string answer = stale.ReadAnswer(10s);
  EXPECT_EQ(StatusOf(answer), 401);
  EXPECT_NE(answer.find("window"), std::string::npos) << answer;
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(server_->counters().unauthenticated_401, 3u);
}

TEST_F(HttpServerTest, ReplayedRequestIs401) {
  const std::string request = SignedRequestBytes(kSecret, "DELETE", "/thing");
  RawSocket first(server_->port());
  ASSERT_TRUE(first.Send(request));
  EXPECT_EQ(StatusOf(first.ReadAnswer(10s)), 200);
  for (int i = 0; i < 3; ++i) {
    RawSocket replay(server_->port());
    ASSERT_TRUE(replay.Send(request));
    std::string answer = replay.ReadAnswer(10s);
    EXPECT_EQ(StatusOf(answer), 401) << answer;
    EXPECT_NE(answer.find("replayed"), std::string::npos) << answer;
  }
  // On the same connection too.
  RawSocket same(server_->port());
  const std::string another = SignedRequestBytes(kSecret, "GET", "/x");
  ASSERT_TRUE(same.Send(another));
  EXPECT_EQ(StatusOf(same.ReadAnswer(10s)), 200);
  ASSERT_TRUE(same.Send(another));
  EXPECT_EQ(StatusOf(same.ReadAnswer(10s)), 401);
  EXPECT_EQ(handled_, 2);
}

TEST_F(HttpServerTest, AChangedBodyUnderAValidHeaderSignatureIs401) {
  std::string request = SignedRequestBytes(kSecret, "PUT", "/k", "good");
  // Same length, other bytes: the headers still verify, the digest not.
  request.replace(request.size() - 4, 4, "evil");
  RawSocket socket(server_->port());
  ASSERT_TRUE(socket.Send(request));
  std::string answer = socket.ReadAnswer(10s);
  EXPECT_EQ(StatusOf(answer), 401) << answer;
  EXPECT_NE(answer.find("digest"), std::string::npos) << answer;
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, AHugeUnauthenticatedBodyIsRefusedWithoutReadingIt) {
  const long rss_before = testing::ResidentKiB();
  RawSocket socket(server_->port());
  ASSERT_TRUE(socket.Send(
      "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n"));
  // The answer comes right after the headers, before any body byte.
  EXPECT_EQ(StatusOf(socket.ReadAnswer(10s)), 401);
  // Then the server stops reading: 1 GiB cannot be pushed into it.
  const std::string chunk(64 * 1024, 'x');
  size_t sent = 0;
  auto give_up = std::chrono::steady_clock::now() + 30s;
  while (sent < (1u << 30) && std::chrono::steady_clock::now() < give_up &&
         socket.Send(chunk)) {
    sent += chunk.size();
  }
  EXPECT_LT(sent, 64u << 20) << "the server kept reading the body";
  const long grown_kib = testing::ResidentKiB() - rss_before;
  EXPECT_LT(grown_kib, 32 * 1024) << "RSS grew by " << grown_kib << " KiB";
  // Signed, but over the limit: 413, also before the body.
  RawSocket signed_socket(server_->port());
  auto headers = SignNewRequest(kSecret, "PUT", "/k", "", WallClockMs());
  std::string head = "PUT /k HTTP/1.1\r\n";
  for (const auto& [name, value] : headers->Fields()) {
    head += name + ": " + value + "\r\n";
  }
  ASSERT_TRUE(signed_socket.Send(head + "Content-Length: 1073741824\r\n\r\n"));
  EXPECT_EQ(StatusOf(signed_socket.ReadAnswer(10s)), 413);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(SignedGet(), 200);
}

TEST_F(HttpServerTest, HeadersThatNeverEndAreCutAtTheLimit) {
  // One endless field.
  RawSocket endless(server_->port());
  ASSERT_TRUE(endless.Send("GET /ok HTTP/1.1\r\nX-A: "));
  const std::string chunk(4096, 'b');
  size_t sent = 0;
  while (sent < (64u << 20) && endless.Send(chunk)) sent += chunk.size();
  EXPECT_LT(sent, 64u << 20) << "the server kept reading headers";
  // Many small fields, each well-formed.
  RawSocket many(server_->port());
  std::string fields = "GET /ok HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) fields += "X-" + std::to_string(i) + ": v\r\n";
  ASSERT_TRUE(many.Send(fields + "\r\n"));
  EXPECT_EQ(StatusOf(many.ReadAnswer(10s)), 431);
  EXPECT_EQ(SignedGet(), 200);
}

TEST_F(HttpServerTest, GarbageIs400AndTheServerKeepsServing) {
  for (const std::string& bytes :
       {std::string("\x00\xff\x13garbage\r\n\r\n", 14),
        std::string("GET /ok HTTP/9.9\r\n\r\n"),
        std::string("GET /ok HTTP/1.1\r\nno colon here\r\n\r\n"),
        std::string("GET\r\n\r\n"),
        std::string("PUT /k HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
        std::string("PUT /k HTTP/1.1\r\nContent-Length: 1\r\n"
                    "Content-Length: 2\r\n\r\n"),
        std::string("GET /ok HTTP/1.1\r\nX-Hvd-Nonce: a\r\nX-Hvd-Nonce: b\r\n"
                    "\r\n")}) {
    RawSocket socket(server_->port());
    ASSERT_TRUE(socket.Send(bytes));
    std::string answer = socket.ReadAnswer(10s);
    EXPECT_EQ(StatusOf(answer), 400) << "[" << answer << "]";
    EXPECT_TRUE(socket.WaitClosed(10s));
  }
  // A signed request whose target has a broken escape: 400 from the core.
  RawSocket bad_escape(server_->port());
  ASSERT_TRUE(bad_escape.Send(SignedRequestBytes(kSecret, "GET", "/a%zz")));
  EXPECT_EQ(StatusOf(bad_escape.ReadAnswer(10s)), 400);
  EXPECT_EQ(SignedGet(), 200);
}

TEST_F(HttpServerTest, AHandlerThatThrowsIs500AndTheServerKeepsServing) {
  EXPECT_EQ(SignedGet("/throw"), 500);
  EXPECT_EQ(SignedGet(), 200);
  EXPECT_EQ(server_->counters().server_5xx, 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsOnOneConnectionAreAnsweredInOrder) {
  RawSocket socket(server_->port());
  ASSERT_TRUE(socket.Send(SignedRequestBytes(kSecret, "GET", "/one") +
                          SignedRequestBytes(kSecret, "GET", "/two")));
  std::string one = socket.ReadAnswer(10s);
  std::string two = socket.ReadAnswer(10s);
  EXPECT_NE(one.find("/one"), std::string::npos) << one;
  EXPECT_NE(two.find("/two"), std::string::npos) << two;
}

TEST_F(HttpServerTest, IdleStrangersAreDroppedSignedClientsStay) {
  RawSocket worker(server_->port());
  ASSERT_TRUE(worker.Send(SignedRequestBytes(kSecret, "GET", "/first")));
  EXPECT_EQ(StatusOf(worker.ReadAnswer(10s)), 200);
  // A connection that never sends a byte is closed after the short idle
  // limit (0.8 s here) ...
  RawSocket stranger(server_->port());
  EXPECT_TRUE(stranger.WaitClosed(20s));
  // ... while the authenticated one, idle as long, still serves.
  EXPECT_FALSE(worker.PeerClosed());
  ASSERT_TRUE(worker.Send(SignedRequestBytes(kSecret, "GET", "/second")));
  EXPECT_EQ(StatusOf(worker.ReadAnswer(10s)), 200);
  EXPECT_GE(server_->counters().dropped_connections, 1u);
}

TEST_F(HttpServerTest, ABodyThatStallsIsDroppedAtItsDeadline) {
  std::string request =
      SignedRequestBytes(kSecret, "PUT", "/k", std::string(1000, 'x'));
  RawSocket socket(server_->port());
  // Headers and the first 10 body bytes, then nothing.
  ASSERT_TRUE(socket.Send(request.substr(0, request.size() - 990)));
  EXPECT_TRUE(socket.WaitClosed(20s));
  EXPECT_EQ(handled_, 0);
}

class HttpServerSlowlorisTest : public HttpServerTest {
  // Room for all 500 from 127.0.0.1, so every one lives until its deadline.
  void Adjust(HttpServerOptions& options) override {
    options.limits.max_unauthenticated = 1000;
    options.limits.max_unauthenticated_per_peer = 1000;
    options.limits.header_deadline = 3s;
  }
};

TEST_F(HttpServerSlowlorisTest,
       DoesNotDelayASignedRequestAndIsCutAtTheDeadline) {
  Slowloris attack(server_->port(), 500);
  ASSERT_EQ(attack.open(), 500u);
  // All 500 hold a half-sent request now.
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(SignedGet(), 200);
  auto took = std::chrono::steady_clock::now() - started;
  // Generous: a signed request takes milliseconds; with a thread per
  // connection it would wait for the attack to end.
  EXPECT_LT(took, 2s) << std::chrono::duration<double>(took).count() << " s";
  // Every slow connection is dropped once its 3 s header deadline passes,
  // whatever it keeps sending.
  EXPECT_TRUE(attack.WaitAllClosed(30s)) << attack.open() << " still open";
  EXPECT_GE(server_->counters().dropped_connections, 500u);
  EXPECT_EQ(SignedGet(), 200);
}

TEST_F(HttpServerTest, WithoutWorkerKeysARequestNamingAWorkerIs401) {
  const WorkerIdentity who{7, "n1:0"};
  const std::string key = WorkerKey(kSecret, who);
  for (const std::string& signer : {key, std::string(kSecret)}) {
    RawSocket socket(server_->port());
    ASSERT_TRUE(socket.Send(
        SignedRequestBytes(signer, "GET", "/ok", "",
                           std::string(kWorkerHeader) + ": 7@n1:0\r\n")));
    const std::string answer = socket.ReadAnswer(10s);
    EXPECT_EQ(StatusOf(answer), 401) << answer;
    EXPECT_NE(answer.find("takes no worker keys"), std::string::npos) << answer;
  }
  EXPECT_EQ(handled_, 0);
}

class WorkerKeyServerTest : public HttpServerTest {
 protected:
  void Adjust(HttpServerOptions& options) override {
    options.worker_keys = true;
  }
  // One request signed with `key`, naming `header` (none when empty).
  std::string Exchange(const std::string& key, const std::string& header) {
    RawSocket socket(server_->port());
    std::string extra;
    if (!header.empty())
      extra = std::string(kWorkerHeader) + ": " + header + "\r\n";
    EXPECT_TRUE(socket.Send(SignedRequestBytes(key, "GET", "/ok", "", extra)));
    return socket.ReadAnswer(10s);
  }
};

TEST_F(WorkerKeyServerTest, AWorkerSignsWithItsOwnKeyAndTheHandlerSeesWho) {
  const WorkerIdentity who{7, "n1:0"};
  HttpClientOptions options = ClientOptions();
  options.secret = WorkerKey(kSecret, who);
  options.worker = who;
  HttpClient client(options);
  auto response = client.Send("GET", "/ok");
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(nlohmann::json::parse(response->body)["worker"], "7@n1:0");
  // The job secret's holder (hvdrun) names no worker.
  const std::string driver = Exchange(kSecret, "");
  EXPECT_EQ(StatusOf(driver), 200) << driver;
  EXPECT_NE(driver.find("\"worker\":\"\""), std::string::npos) << driver;
}

TEST_F(WorkerKeyServerTest, AKeyServesOnlyTheWorkerItWasMadeFor) {
  const std::string key = WorkerKey(kSecret, {7, "n1:0"});
  for (const std::string& claim :
       {std::string("8@n1:0"), std::string("7@n1:1"), std::string("7@n2:0")}) {
    const std::string answer = Exchange(key, claim);
    EXPECT_EQ(StatusOf(answer), 401) << claim << ": " << answer;
    EXPECT_NE(answer.find("bad request signature"), std::string::npos)
        << answer;
  }
  // The job secret does not sign for a worker either, nor a malformed name.
  EXPECT_EQ(StatusOf(Exchange(kSecret, "7@n1:0")), 401);
  const std::string malformed = Exchange(key, "seven@n1:0");
  EXPECT_EQ(StatusOf(malformed), 401);
  EXPECT_NE(malformed.find(kWorkerHeader), std::string::npos) << malformed;
  EXPECT_EQ(handled_, 0);
}

class HttpServerAdmissionTest : public HttpServerTest {
  void Adjust(HttpServerOptions& options) override {
    options.limits.max_unauthenticated_per_peer = 4;
    options.limits.unauthenticated_idle = 60s;
    options.limits.header_deadline = 60s;
  }
};

TEST_F(HttpServerAdmissionTest, NewConnectionsDropTheOldestStrangers) {
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (int i = 0; i < 10; ++i) {
    idle.push_back(std::make_unique<RawSocket>(server_->port()));
  }
  // A signed client connecting now is never locked out ...
  EXPECT_EQ(SignedGet(), 200);
  // ... the oldest strangers made room for it and for the newer ones.
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(idle[i]->WaitClosed(20s)) << i;
  for (int i = 7; i < 10; ++i) EXPECT_FALSE(idle[i]->PeerClosed()) << i;
}

TEST_F(HttpServerTest, ManyRefusalsMakeAFewLogLines) {
  // A server logs through the default logger of the time it started.
  server_.reset();
  auto log = CaptureLog();
  StartServer();
  for (int i = 0; i < 300; ++i) {
    RawSocket socket(server_->port());
    ASSERT_TRUE(socket.Send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(StatusOf(socket.ReadAnswer(10s)), 401);
  }
  server_->Stop();  // logs what is left as one line
  const std::string text = log->str();
  int lines = CountLines(text, "refused");
  // The first at once, at most one per 10 s interval, one at the end.
  EXPECT_GE(lines, 2) << text;
  EXPECT_LE(lines, 4) << text;
  EXPECT_NE(text.find("refused 1 request (401: 1"), std::string::npos) << text;
  EXPECT_NE(text.find("401: "), std::string::npos) << text;
  EXPECT_NE(text.find("last from 127.0.0.1:"), std::string::npos) << text;
  EXPECT_EQ(server_->counters().unauthenticated_401, 300u);
}

TEST(HttpServerStartTest, RefusesWithoutSecretOrHandlerOrOnABusyPort) {
  HttpServerOptions options;
  auto handler = [](const HttpRequest&) { return HttpAnswer{}; };
  EXPECT_EQ(SignedHttpServer::Start(options, handler).status().code(),
            Code::kInvalidArgument);
  options.secret = "s";
  EXPECT_EQ(SignedHttpServer::Start(options, nullptr).status().code(),
            Code::kInvalidArgument);
  auto first = SignedHttpServer::Start(options, handler);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  options.port = (*first)->port();
  EXPECT_FALSE(SignedHttpServer::Start(options, handler).ok());
  options.port = 0;
  options.bind_host = "203.0.113.1";  // not an address of this machine
  EXPECT_FALSE(SignedHttpServer::Start(options, handler).ok());
}

// Bodies held while their handlers run (long-polls) count against one
// budget; past it a request is refused before its body is read, with a 503
// that clients retry, and the budget frees as handlers end (issue 33).
TEST(HttpServerBodyBudgetTest, BodiesHeldAtOnceAreBoundedAnd503IsRetried) {
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  HttpServerOptions options;
  options.secret = kSecret;
  options.handler_threads = 2;
  options.limits.body_bytes = 64 * 1024;
  options.limits.body_budget_bytes = 128 * 1024;
  auto server = SignedHttpServer::Start(options, [&](const HttpRequest& req) {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return release || req.path != "/hold"; });
    return HttpAnswer{};
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string body(60 * 1024, 'b');
  RawSocket first((*server)->port()), second((*server)->port());
  ASSERT_TRUE(first.Send(SignedRequestBytes(kSecret, "PUT", "/hold", body)));
  ASSERT_TRUE(second.Send(SignedRequestBytes(kSecret, "PUT", "/hold", body)));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return entered == 2; }));
  }
  RawSocket third((*server)->port());
  ASSERT_TRUE(third.Send(SignedRequestBytes(kSecret, "PUT", "/now", body)));
  const std::string refused = third.ReadAnswer(10s);
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  EXPECT_NE(refused.find("bytes of request bodies"), std::string::npos)
      << refused;
  // A request without a body needs none of the budget: it waits for a
  // handler thread, not refused (answered below).
  RawSocket bodiless((*server)->port());
  ASSERT_TRUE(bodiless.Send(SignedRequestBytes(kSecret, "GET", "/now")));
  // A client retries the 503 until the held bodies are done.
  HttpClientOptions client_options;
  client_options.host = "127.0.0.1";
  client_options.port = (*server)->port();
  client_options.secret = kSecret;
  client_options.max_attempts = 20;
  client_options.max_backoff = 200ms;
  HttpClient client(client_options);
  std::thread releaser([&] {
    // Released once the client's first attempt was refused (polled: the
    // server has no hook for it).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while ((*server)->counters().server_5xx < 2 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  });
  auto retried = client.Send("PUT", "/now", body);
  releaser.join();
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->status, 200);
  EXPECT_EQ(StatusOf(first.ReadAnswer(10s)), 200);
  EXPECT_EQ(StatusOf(second.ReadAnswer(10s)), 200);
  EXPECT_EQ(StatusOf(bodiless.ReadAnswer(10s)), 200);
}

TEST(HttpServerStopTest, StopWaitsForARunningHandlerAndAnswersIt) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  HttpServerOptions options;
  options.secret = kSecret;
  auto server = SignedHttpServer::Start(options, [&](const HttpRequest&) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return HttpAnswer{};
  });
  ASSERT_TRUE(server.ok());
  RawSocket socket((*server)->port());
  ASSERT_TRUE(socket.Send(SignedRequestBytes(kSecret, "GET", "/wait")));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return entered; }));
    release = true;  // what an owner does before Stop(): wake its waits
  }
  cv.notify_all();
  (*server)->Stop();
  EXPECT_EQ(StatusOf(socket.ReadAnswer(10s)), 200);
  EXPECT_TRUE(socket.WaitClosed(10s));
}

// Requests that `never_blocks` names run on the I/O thread: they are
// answered while every pool thread is held, and checked as strictly.
TEST(HttpServerInlineTest, AQuickRequestIsAnsweredWhileThePoolIsHeld) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  std::atomic<int> quick{0};
  HttpServerOptions options;
  options.secret = kSecret;
  options.handler_threads = 1;
  options.limits.body_bytes = 2 * kInlineBodyBytes;
  options.never_blocks = [](const HttpRequest& req) {
    return req.path == "/quick";
  };
  auto server = SignedHttpServer::Start(options, [&](const HttpRequest& req) {
    if (req.path == "/quick") {
      ++quick;
      return HttpAnswer::Json(std::to_string(req.body.size()));
    }
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return HttpAnswer{};
  });
  ASSERT_TRUE(server.ok());
  auto release_pool = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
  };
  RawSocket waiting((*server)->port());
  ASSERT_TRUE(waiting.Send(SignedRequestBytes(kSecret, "GET", "/wait")));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return entered; }));
  }
  // The one pool thread is held: only the I/O thread can answer these.
  RawSocket quick_socket((*server)->port());
  ASSERT_TRUE(
      quick_socket.Send(SignedRequestBytes(kSecret, "PUT", "/quick", "abc")));
  std::string answer = quick_socket.ReadAnswer(10s);
  EXPECT_EQ(StatusOf(answer), 200) << answer;
  EXPECT_NE(answer.find("\r\n\r\n3"), std::string::npos) << answer;
  std::string forged = SignedRequestBytes(kSecret, "PUT", "/quick", "good");
  forged.replace(forged.size() - 4, 4, "evil");
  RawSocket forged_socket((*server)->port());
  ASSERT_TRUE(forged_socket.Send(forged));
  EXPECT_EQ(StatusOf(forged_socket.ReadAnswer(10s)), 401);
  EXPECT_EQ(quick, 1);
  // A body past kInlineBodyBytes waits for the pool like any request.
  RawSocket large((*server)->port());
  ASSERT_TRUE(large.Send(SignedRequestBytes(
      kSecret, "PUT", "/quick", std::string(kInlineBodyBytes + 1, 'x'))));
  EXPECT_EQ(quick, 1);
  release_pool();
  EXPECT_EQ(StatusOf(waiting.ReadAnswer(10s)), 200);
  EXPECT_EQ(StatusOf(large.ReadAnswer(10s)), 200);
  EXPECT_EQ(quick, 2);
  (*server)->Stop();
}

// The read-token mode of the status server: GET with the token, nothing
// else, and a signature does not stand in for the token.
class ReadTokenServerTest : public HttpServerTest {
 protected:
  static constexpr char kToken[] = "0123456789abcdef-read-token";
  void Adjust(HttpServerOptions& options) override {
    options.access = HttpAccess::kReadToken;
    options.secret.clear();
    options.read_token = kToken;
  }
  std::string Ask(const std::string& request) {
    RawSocket socket(server_->port());
    EXPECT_TRUE(socket.Send(request));
    return socket.ReadAnswer(10s);
  }
};

TEST_F(ReadTokenServerTest, GetWithTheTokenInTheQueryOrAHeaderIsHandled) {
  std::string answer = Ask(std::string("GET /page?token=") + kToken +
                           " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(answer), 200) << answer;
  EXPECT_NE(answer.find("\"path\":\"/page\""), std::string::npos) << answer;
  answer = Ask(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n"
                           "Authorization: Bearer ") +
               kToken + "\r\n\r\n");
  EXPECT_EQ(StatusOf(answer), 200) << answer;
  EXPECT_EQ(handled_, 2);
}

TEST_F(ReadTokenServerTest, WithoutTheRightTokenItIs401AndNeverHandled) {
  EXPECT_EQ(StatusOf(Ask("GET /page HTTP/1.1\r\nHost: x\r\n\r\n")), 401);
  EXPECT_EQ(StatusOf(Ask("GET /page?token=guess HTTP/1.1\r\nHost: x\r\n\r\n")),
            401);
  EXPECT_EQ(StatusOf(Ask("GET /page HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Basic dXNlcjpwYXNz\r\n\r\n")),
            401);
  // A request signed with some secret is no reader.
  EXPECT_EQ(StatusOf(Ask(SignedRequestBytes(kSecret, "GET", "/page"))), 401);
  EXPECT_EQ(handled_, 0);
}

TEST_F(ReadTokenServerTest, AnythingButAPlainGetIsRefusedEvenWithTheToken) {
  const std::string token = std::string("?token=") + kToken;
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "HEAD"}) {
    std::string answer =
        Ask(std::string(method) + " /page" + token +
            " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(StatusOf(answer), 405) << method << ": " << answer;
  }
  std::string answer =
      Ask("GET /page" + token +
          " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(StatusOf(answer), 405) << answer;
  EXPECT_EQ(handled_, 0);
}

TEST(ReadTokenServerStartTest, RefusesAShortToken) {
  HttpServerOptions options;
  options.access = HttpAccess::kReadToken;
  options.read_token = "short";
  auto server = SignedHttpServer::Start(
      options, [](const HttpRequest&) { return HttpAnswer::Json("{}"); });
  EXPECT_FALSE(server.ok());
}

}  // namespace
}  // namespace hvd::common
