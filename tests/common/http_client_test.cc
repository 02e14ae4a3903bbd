#include "hvd/common/http_client.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <set>
#include <thread>

#include "hvd/common/hmac.h"

namespace hvd::common {
namespace {

constexpr char kSecret[] = "test-secret";

// A real httplib server on loopback whose handlers the tests choose.
class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      listener_done_ = true;
    });
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_ = true;
    }
    cv_.notify_all();
    // stop() before the listener runs is ignored: repeat it until the
    // listener has returned.
    while (!listener_done_) {
      server_.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    thread_.join();
  }
  HttpClientOptions Options() {
    HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = port_;
    options.secret = kSecret;
    options.initial_backoff = std::chrono::milliseconds(1);
    options.max_backoff = std::chrono::milliseconds(5);
    return options;
  }
  // Blocks a handler until the test ends: a server that never answers.
  void Hang() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return release_; });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> hits_{0};
  std::atomic<bool> listener_done_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool release_ = false;
};

TEST_F(HttpClientTest, SignsRequestsSoTheServerCanVerifyThem) {
  server_.Put(
      "/v1/thing", [this](const httplib::Request& req, httplib::Response& res) {
        ++hits_;
        const std::string ts = req.get_header_value(kTimestampHeader);
        const std::string nonce = req.get_header_value(kNonceHeader);
        const std::string digest = req.get_header_value(kContentSha256Header);
        const std::string signature = req.get_header_value(kSignatureHeader);
        auto verified = VerifyRequestHeaders(
            kSecret, req.method, req.target,
            ReceivedSignature{ts, nonce, digest, signature}, WallClockMs(),
            std::chrono::seconds(5));
        Status status =
            verified.ok() ? VerifyBody(digest, req.body) : verified.status();
        res.status = status.ok() ? 200 : 401;
        res.set_content(status.ToString(), "text/plain");
      });
  HttpClient client(Options());
  auto response = client.Send("PUT", "/v1/thing?x=1", "payload");
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(hits_, 1);
}

TEST_F(HttpClientTest, Retries503ThenSucceedsWithAFreshNonceEachAttempt) {
  std::set<std::string> nonces;
  server_.Get("/flaky", [this, &nonces](const httplib::Request& req,
                                        httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    nonces.insert(req.get_header_value(kNonceHeader));
    res.status = ++hits_ < 3 ? 503 : 200;
    res.set_content("ok", "text/plain");
  });
  HttpClient client(Options());
  auto response = client.Send("GET", "/flaky");
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(hits_, 3);
  // A server refuses a repeated nonce as a replay: every attempt is new.
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(nonces.size(), 3u);
  EXPECT_EQ(nonces.count(""), 0u);
}

TEST_F(HttpClientTest, ReturnsClientErrorsWithoutRetrying) {
  server_.Get("/missing",
              [this](const httplib::Request&, httplib::Response& res) {
                ++hits_;
                res.status = 404;
              });
  HttpClient client(Options());
  auto response = client.Send("GET", "/missing");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(hits_, 1);
}

TEST_F(HttpClientTest, RefusedConnectionIsATransportErrorNamingTheRequest) {
  // A port bound but not listening refuses connections; holding it for the
  // whole test keeps tests running alongside from taking it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  int free_port = ntohs(addr.sin_port);
  HttpClientOptions options = Options();
  options.port = free_port;
  options.max_attempts = 3;
  HttpClient client(options);
  auto response = client.Send("PUT", "/v1/kv/s/k", "v");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kTransport)
      << response.status().ToString();
  const std::string& message = response.status().message();
  EXPECT_NE(message.find("PUT http://127.0.0.1:" + std::to_string(free_port) +
                         "/v1/kv/s/k"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("3 attempts"), std::string::npos) << message;
}

TEST_F(HttpClientTest, AServerThatNeverAnswersIsATimeout) {
  server_.Get("/hang", [this](const httplib::Request&, httplib::Response&) {
    ++hits_;
    Hang();
  });
  HttpClientOptions options = Options();
  options.read_timeout = std::chrono::milliseconds(200);
  options.max_attempts = 2;
  HttpClient client(options);
  auto response = client.Send("GET", "/hang");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kTimeout)
      << response.status().ToString();
  EXPECT_EQ(hits_, 2);
}

}  // namespace
}  // namespace hvd::common
