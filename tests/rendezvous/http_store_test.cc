// Real processes build a Gloo context through HttpStore and allreduce.
#include "hvd/rendezvous/http_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <gloo/common/error.h>
#include <thread>

#include "child_processes.h"
#include "hvd/rendezvous/server.h"

namespace hvd::rendezvous {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "feedfacefeedface";

class HttpStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.secret = kSecret;
    options.threads = 32;
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  common::HttpClientOptions ClientOptions() {
    common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.secret = kSecret;
    return options;
  }
  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(HttpStoreTest, FourProcessesConnectAndAllreduce) {
  constexpr int kSize = 4;
  hvd::testing::ChildProcesses workers;
  for (int rank = 0; rank < kSize; ++rank) {
    workers.Spawn({HVD_GLOO_WORKER, std::to_string(server_->port()),
                   std::to_string(rank), std::to_string(kSize), "g1/"},
                  kSecret);
  }
  std::vector<int> codes = workers.Wait(60s);
  EXPECT_EQ(codes, std::vector<int>(kSize, 0));
  // Per rank two PUTs (hostname, address) and two multi-key GETs (rank 0
  // asks for no hostname): O(N), not O(N^2).
  EXPECT_EQ(server_->requests_total(), 4u * kSize - 1);
}

TEST_F(HttpStoreTest, GenerationsWithTheirOwnPrefixDoNotCollide) {
  // Stale addresses of an older generation under another prefix are ignored.
  RendezvousClient client(ClientOptions());
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(client.Set("gloo", "g1/" + std::to_string(rank), "stale").ok());
  }
  hvd::testing::ChildProcesses workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.Spawn({HVD_GLOO_WORKER, std::to_string(server_->port()),
                   std::to_string(rank), "2", "g2/"},
                  kSecret);
  }
  EXPECT_EQ(workers.Wait(60s), std::vector<int>(2, 0));
}

TEST_F(HttpStoreTest, WrongSecretFailsClearly) {
  hvd::testing::ChildProcesses workers;
  workers.Spawn(
      {HVD_GLOO_WORKER, std::to_string(server_->port()), "0", "2", "g1/"},
      "wrong");
  EXPECT_EQ(workers.Wait(60s), std::vector<int>{3});
}

TEST_F(HttpStoreTest, MissingPeerIsAnIoExceptionAfterTheTimeout) {
  HttpStore store(ClientOptions(), "gloo", "g1/", 100ms);
  store.set("0", {'a'});
  EXPECT_THROW(store.wait({"1"}), gloo::IoException);
  EXPECT_EQ(store.last_error().code(), common::Code::kTimeout);
  store.wait({"0"});
  EXPECT_EQ(store.get("0"), std::vector<char>{'a'});
}

TEST_F(HttpStoreTest, GlooTimeoutLongerThanTheStoresEndsAtTheStoresTimeout) {
  // Gloo hands its collective timeout to wait(); a peer that never arrives
  // must still fail the rendezvous at the store's (start) timeout.
  HttpStore store(ClientOptions(), "gloo", "g1/", 100ms);
  EXPECT_THROW(store.wait({"1"}, std::chrono::milliseconds(600000)),
               gloo::IoException);
  EXPECT_EQ(store.last_error().code(), common::Code::kTimeout);
  // The request asked the server to wait what was left of 100 ms.
  const std::string message = store.last_error().message();
  const size_t at = message.find("wait_ms=");
  ASSERT_NE(at, std::string::npos) << message;
  EXPECT_LE(std::stoll(message.substr(at + 8)), 100) << message;
}

// Rank 2 of three never called hvd.init(): rank 0's full mesh times out
// naming it, not a key, and not rank 1, which published its host name.
TEST_F(HttpStoreTest, AFullMeshThatTimesOutNamesTheRanksThatNeverCame) {
  RendezvousClient peer(ClientOptions());
  ASSERT_TRUE(peer.Set("gloo", "g1/rank_1", "host1").ok());
  HttpStore store(ClientOptions(), "gloo", "g1/", 100ms);
  store.PrefetchFullMesh(0, 3);
  store.set("rank_0", {'h'});
  EXPECT_THROW(store.get("rank_1"), gloo::IoException);
  EXPECT_EQ(store.last_error().code(), common::Code::kTimeout);
  const std::string message = store.last_error().message();
  EXPECT_EQ(message.rfind("rank 2 has not reached hvd.init() in 0 s", 0), 0u)
      << message;
  EXPECT_EQ(message.find("rank 1 "), std::string::npos) << message;
}

TEST(LateMeshRanksTest, RanksWithoutAHostNameKeyOtherThanOnesOwn) {
  const RendezvousClient::Values present = {
      {"g3/rank_0", "a"}, {"g3/rank_2", "c"}, {"g2/rank_1", "stale"}};
  EXPECT_EQ(LateMeshRanks(present, "g3/", 0, 4), (std::vector<int>{1, 3}));
  EXPECT_EQ(LateMeshRanks(present, "g3/", 1, 3), std::vector<int>{});
}

TEST_F(HttpStoreTest, UnreachableServerIsAnIoException) {
  common::HttpClientOptions options = ClientOptions();
  server_->Stop();
  options.max_attempts = 2;
  HttpStore store(options, "gloo", "g1/", 100ms);
  EXPECT_THROW(store.set("0", {'a'}), gloo::IoException);
  EXPECT_EQ(store.last_error().code(), common::Code::kTransport);
}

}  // namespace
}  // namespace hvd::rendezvous
