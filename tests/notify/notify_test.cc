// hvd_notify: the HostsUpdated codec, and the worker's NotificationServer
// with the driver's SendHostsUpdated over real HTTP on loopback.
#include <gtest/gtest.h>

#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <mutex>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "../common/raw_socket.h"
#include "hvd/common/hmac.h"
#include "hvd/common/http_client.h"
#include "hvd/notify/client.h"
#include "hvd/notify/messages.h"
#include "hvd/notify/server.h"

namespace hvd::notify {
namespace {

using common::Code;
using namespace std::chrono_literals;

constexpr char kSecret[] = "notify-test-secret";

HostsUpdated Message(int64_t sequence, int64_t generation = 2) {
  HostsUpdated m;
  m.generation = generation;
  m.sequence = sequence;
  m.added = {"new-1", "new-2"};
  m.removed = {"old-1"};
  return m;
}

// A port on 127.0.0.1 that nobody listens on: bound (so no one else gets
// it) but never listened on, so connecting is refused.
class UnusedPort {
 public:
  UnusedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~UnusedPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// ---- messages.h ---------------------------------------------------------

TEST(HostsUpdatedCodecTest, RoundTrip) {
  HostsUpdated m = Message(42, 9000000000);
  auto decoded = DecodeHostsUpdated(Encode(m));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->generation, 9000000000);
  EXPECT_EQ(decoded->sequence, 42);
  EXPECT_EQ(decoded->added, (std::vector<std::string>{"new-1", "new-2"}));
  EXPECT_EQ(decoded->removed, std::vector<std::string>{"old-1"});
}

// A reason or a host quoting bytes that are not UTF-8 is sent with them
// replaced: encoding throws nothing (it ran on an errand thread of hvdrun's,
// where a throw ended hvdrun).
TEST(HostsUpdatedCodecTest, BytesThatAreNotUtf8AreReplacedNotThrown) {
  HostsUpdated m = Message(3);
  m.added = {"h\xff"};
  std::string text;
  ASSERT_NO_THROW(text = Encode(m));
  auto decoded = DecodeHostsUpdated(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->added, std::vector<std::string>{"h\xef\xbf\xbd"});
  ASSERT_NO_THROW(text = Encode(Abort{2, "slot h:0 said \xc3("}));
  auto abort = DecodeAbort(text);
  ASSERT_TRUE(abort.ok()) << abort.status().ToString();
  EXPECT_EQ(abort->generation, 2);
}

TEST(HostsUpdatedCodecTest, EmptyListsRoundTrip) {
  HostsUpdated m;
  m.generation = 1;
  m.sequence = 1;
  auto decoded = DecodeHostsUpdated(Encode(m));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->added.empty());
  EXPECT_TRUE(decoded->removed.empty());
}

TEST(HostsUpdatedCodecTest, SequenceMustBePositive) {
  for (int64_t sequence : {0, -1, -100}) {
    auto decoded = DecodeHostsUpdated(Encode(Message(sequence)));
    ASSERT_FALSE(decoded.ok()) << sequence;
    EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find("sequence"), std::string::npos)
        << decoded.status().ToString();
  }
}

TEST(HostsUpdatedCodecTest, MissingFieldsWrongTypesAndNonJsonAreRejected) {
  for (const std::string& text : {
           std::string(""),
           std::string("garbage"),
           std::string("{\"generation\": 1"),
           std::string("[1, 2, 3]"),
           std::string("{}"),
           std::string(R"({"sequence":1,"added":[],"removed":[]})"),
           std::string(R"({"generation":1,"added":[],"removed":[]})"),
           std::string(R"({"generation":1,"sequence":1,"removed":[]})"),
           std::string(R"({"generation":1,"sequence":1,"added":[]})"),
           std::string(
               R"({"generation":1,"sequence":"1","added":[],"removed":[]})"),
           std::string(
               R"({"generation":1,"sequence":1,"added":"a","removed":[]})"),
           std::string(
               R"({"generation":1,"sequence":1,"added":[1],"removed":[]})"),
           // Floats and integers past int64 (found by notify_messages_fuzz).
           std::string(
               R"({"generation":2.5,"sequence":1,"added":[],"removed":[]})"),
           std::string(
               R"({"generation":1e19,"sequence":1,"added":[],"removed":[]})"),
           std::string(R"({"generation":1,"sequence":9223372036854775808,)"
                       R"("added":[],"removed":[]})"),
       }) {
    auto decoded = DecodeHostsUpdated(text);
    ASSERT_FALSE(decoded.ok()) << text;
    EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument) << text;
    EXPECT_NE(decoded.status().message().find("malformed"), std::string::npos)
        << decoded.status().ToString();
  }
}

// ---- server.h + client.h ------------------------------------------------

class NotifyServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = NotificationServer::Start("127.0.0.1", kSecret);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  // A POST to the server signed with the job secret, body as given.
  common::Result<common::HttpResponse> RawPost(const std::string& body) {
    common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = Port();
    options.secret = kSecret;
    options.max_attempts = 1;
    common::HttpClient client(options);
    return client.Send("POST", kHostsUpdatedPath, body);
  }

  int Port() const {
    const std::string address = server_->address();
    return std::stoi(address.substr(address.rfind(':') + 1));
  }

  std::unique_ptr<NotificationServer> server_;
};

TEST_F(NotifyServerTest, AddressIsHostAndPort) {
  const std::string address = server_->address();
  EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  EXPECT_GT(Port(), 0);
  EXPECT_EQ(server_->latest_sequence(), 0);
}

TEST_F(NotifyServerTest, SendRaisesLatestSequence) {
  auto status = SendHostsUpdated(server_->address(), kSecret, Message(1), 5s);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(server_->latest_sequence(), 1);
  status = SendHostsUpdated(server_->address(), kSecret, Message(7), 5s);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(server_->latest_sequence(), 7);
}

TEST_F(NotifyServerTest, OlderSequenceDoesNotLowerIt) {
  ASSERT_TRUE(
      SendHostsUpdated(server_->address(), kSecret, Message(10), 5s).ok());
  // A late, older message is accepted (200) but changes nothing.
  auto late = SendHostsUpdated(server_->address(), kSecret, Message(3), 5s);
  EXPECT_TRUE(late.ok()) << late.ToString();
  EXPECT_EQ(server_->latest_sequence(), 10);
  ASSERT_TRUE(
      SendHostsUpdated(server_->address(), kSecret, Message(10), 5s).ok());
  EXPECT_EQ(server_->latest_sequence(), 10);
  ASSERT_TRUE(
      SendHostsUpdated(server_->address(), kSecret, Message(11), 5s).ok());
  EXPECT_EQ(server_->latest_sequence(), 11);
}

// The changes of the newest generation's pushes, as Horovod's
// HostUpdateResult bits: united within a generation, afresh for a newer
// one, untouched by an older one.
TEST_F(NotifyServerTest, LatestChangesAreThoseOfTheNewestGeneration) {
  EXPECT_EQ(server_->latest_changes(), 0);
  auto send = [&](int64_t sequence, int64_t generation, bool added,
                  bool removed) {
    HostsUpdated m = Message(sequence, generation);
    if (!added) m.added.clear();
    if (!removed) m.removed.clear();
    ASSERT_TRUE(SendHostsUpdated(server_->address(), kSecret, m, 5s).ok());
  };
  send(1, 3, true, false);
  EXPECT_EQ(server_->latest_changes(), kHostsAdded);
  send(2, 3, false, true);
  EXPECT_EQ(server_->latest_changes(), kHostsAdded | kHostsRemoved);
  send(3, 4, false, true);
  EXPECT_EQ(server_->latest_changes(), kHostsRemoved);
  send(4, 2, true, false);
  EXPECT_EQ(server_->latest_changes(), kHostsRemoved);
  EXPECT_EQ(server_->latest_generation(), 4);
}

TEST_F(NotifyServerTest, ConcurrentSendersLeaveTheHighestSequence) {
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        // Thread t sends t+1, t+5, ..., t+37: together 1..40.
        int64_t sequence = t + 1 + 4 * i;
        EXPECT_TRUE(
            SendHostsUpdated(server_->address(), kSecret, Message(sequence), 5s)
                .ok());
      }
    });
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(server_->latest_sequence(), 40);
}

TEST_F(NotifyServerTest, WrongSecretIsRefusedAndChangesNothing) {
  ASSERT_TRUE(
      SendHostsUpdated(server_->address(), kSecret, Message(2), 5s).ok());
  auto refused =
      SendHostsUpdated(server_->address(), "wrong-secret", Message(99), 5s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("401"), std::string::npos)
      << refused.ToString();
  EXPECT_EQ(server_->latest_sequence(), 2);
}

TEST_F(NotifyServerTest, UnsignedRequestIs401) {
  // A POST without signature headers, straight over a socket.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(Port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string body = Encode(Message(50));
  const std::string request = std::string("POST ") + kHostsUpdatedPath +
                              " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                              "Content-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char buffer[4096];
  ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
  close(fd);
  ASSERT_GT(n, 0);
  std::string answer(buffer, n);
  EXPECT_NE(answer.find(" 401 "), std::string::npos) << answer;
  EXPECT_EQ(server_->latest_sequence(), 0);
}

TEST_F(NotifyServerTest, MalformedBodyIs400AndServerKeepsServing) {
  for (const std::string& body :
       {std::string("garbage"), std::string("{}"), std::string(""),
        Encode(Message(0)), std::string(R"({"generation":1,"sequence":5})")}) {
    auto response = RawPost(body);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, 400) << "[" << body << "] " << response->body;
  }
  EXPECT_EQ(server_->latest_sequence(), 0);
  auto good = SendHostsUpdated(server_->address(), kSecret, Message(3), 5s);
  ASSERT_TRUE(good.ok()) << good.ToString();
  EXPECT_EQ(server_->latest_sequence(), 3);
}

TEST_F(NotifyServerTest, RawSignedGoodMessageIs200) {
  auto response = RawPost(Encode(Message(4)));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(server_->latest_sequence(), 4);
}

TEST_F(NotifyServerTest, SlowlorisDoesNotKeepThePushOut) {
  testing::Slowloris attack(Port(), 500);
  for (int sequence = 1; sequence <= 3; ++sequence) {
    auto started = std::chrono::steady_clock::now();
    auto sent =
        SendHostsUpdated(server_->address(), kSecret, Message(sequence), 5s);
    ASSERT_TRUE(sent.ok()) << sent.ToString();
    // Generous: milliseconds normally; issue 11 measured the push kept out
    // until the workers missed their check-in.
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  }
  EXPECT_EQ(server_->latest_sequence(), 3);
  EXPECT_TRUE(attack.WaitAllClosed(30s)) << attack.open() << " still open";
}

TEST_F(NotifyServerTest, AReplayedPushIsRefused) {
  const std::string push = testing::SignedRequestBytes(
      kSecret, "POST", kHostsUpdatedPath, Encode(Message(5)));
  testing::RawSocket first(Port());
  ASSERT_TRUE(first.Send(push));
  EXPECT_EQ(testing::StatusOf(first.ReadAnswer(10s)), 200);
  testing::RawSocket replay(Port());
  ASSERT_TRUE(replay.Send(push));
  std::string answer = replay.ReadAnswer(10s);
  EXPECT_EQ(testing::StatusOf(answer), 401) << answer;
  EXPECT_NE(answer.find("replayed"), std::string::npos) << answer;
}

TEST_F(NotifyServerTest, BodiesThatAreNotUtf8OrHugeAreRefused) {
  auto response = RawPost(
      "{\"generation\": 1, \"sequence\": 2, \"added\": [\"\xff\xfe\"], "
      "\"removed\": []}");
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 400) << response->body;
  testing::RawSocket huge(Port());
  ASSERT_TRUE(huge.Send(std::string("POST ") + kHostsUpdatedPath +
                        " HTTP/1.1\r\nContent-Length: 1073741824\r\n\r\n"));
  EXPECT_EQ(testing::StatusOf(huge.ReadAnswer(10s)), 401);
  auto signed_huge = common::SignNewRequest(kSecret, "POST", kHostsUpdatedPath,
                                            "", common::WallClockMs());
  std::string head = std::string("POST ") + kHostsUpdatedPath + " HTTP/1.1\r\n";
  for (const auto& [name, value] : signed_huge->Fields()) {
    head += name + ": " + value + "\r\n";
  }
  testing::RawSocket too_big(Port());
  ASSERT_TRUE(too_big.Send(head + "Content-Length: 2097152\r\n\r\n"));
  EXPECT_EQ(testing::StatusOf(too_big.ReadAnswer(10s)), 413);
  EXPECT_EQ(server_->latest_sequence(), 0);
  EXPECT_TRUE(
      SendHostsUpdated(server_->address(), kSecret, Message(1), 5s).ok());
}

TEST(NotifyClientTest, NobodyListeningIsTransportQuickly) {
  UnusedPort unused;
  const std::string address = "127.0.0.1:" + std::to_string(unused.port());
  auto started = std::chrono::steady_clock::now();
  auto status = SendHostsUpdated(address, kSecret, Message(1), 2s);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Code::kTransport) << status.ToString();
  EXPECT_NE(status.message().find(address), std::string::npos)
      << status.ToString();
  EXPECT_LT(elapsed, 3s);
}

TEST(NotifyClientTest, AddressWithoutPortIsInvalidArgument) {
  auto status = SendHostsUpdated("localhost", kSecret, Message(1), 1s);
  EXPECT_EQ(status.code(), Code::kInvalidArgument) << status.ToString();
}

TEST(NotifyServerLifetimeTest, DestroyingAnIdleServerReturnsPromptly) {
  auto server = NotificationServer::Start("127.0.0.1", kSecret);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string address = (*server)->address();
  ASSERT_TRUE(SendHostsUpdated(address, kSecret, Message(1), 5s).ok());
  auto started = std::chrono::steady_clock::now();
  server.value().reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  // Nobody answers there any more.
  EXPECT_EQ(SendHostsUpdated(address, kSecret, Message(2), 1s).code(),
            Code::kTransport);
}

TEST(NotifyServerLifetimeTest, DestroyingRightAfterStartReturnsPromptly) {
  for (int i = 0; i < 5; ++i) {
    auto started = std::chrono::steady_clock::now();
    {
      auto server = NotificationServer::Start("127.0.0.1", kSecret);
      ASSERT_TRUE(server.ok()) << server.status().ToString();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  }
}

TEST(NotifyServerLifetimeTest, UnbindableHostIsAnError) {
  auto server = NotificationServer::Start("203.0.113.1", kSecret);
  EXPECT_FALSE(server.ok());
}

TEST(AbortCodecTest, RoundTripAndRejections) {
  Abort abort{7, "slot a:0 exited with code 3"};
  auto back = DecodeAbort(Encode(abort));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->generation, 7);
  EXPECT_EQ(back->reason, "slot a:0 exited with code 3");
  EXPECT_FALSE(DecodeAbort("{}").ok());
  EXPECT_FALSE(DecodeAbort("{\"generation\": \"x\", \"reason\": \"\"}").ok());
  EXPECT_FALSE(DecodeAbort("not json").ok());
  EXPECT_FALSE(DecodeAbort("{\"generation\": 1e19, \"reason\": \"\"}").ok());
}

TEST(AbortServerTest, SignedAbortReachesTheHandlerUnsignedDoesNot) {
  std::mutex mu;
  std::vector<Abort> received;
  auto server =
      NotificationServer::Start("127.0.0.1", kSecret, [&](const Abort& abort) {
        std::lock_guard<std::mutex> lock(mu);
        received.push_back(abort);
      });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  common::Status sent =
      SendAbort((*server)->address(), kSecret, Abort{3, "why"}, 5s);
  ASSERT_TRUE(sent.ok()) << sent.ToString();
  common::Status wrong =
      SendAbort((*server)->address(), "other-secret", Abort{4, "no"}, 5s);
  EXPECT_EQ(wrong.code(), common::Code::kUnauthenticated) << wrong.ToString();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].generation, 3);
  EXPECT_EQ(received[0].reason, "why");
  // Hosts updates do not go through the abort handler.
  EXPECT_EQ((*server)->latest_sequence(), 0);
}

}  // namespace
}  // namespace hvd::notify
