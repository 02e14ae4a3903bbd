// EtcdStore: sealed values (pure), then real Gloo contexts connected
// through a real etcd member by four worker processes, a forged value
// refused, and bounded waits.
#include "hvd/rendezvous/etcd_store.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "child_processes.h"
#include "etcd_member.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/etcd_seal.h"

namespace hvd::rendezvous {
namespace {

using common::Code;
using namespace std::chrono_literals;

constexpr char kSecret[] = "etcd-store-test-secret";

TEST(EtcdValueSealTest, OnlyTheSameSecretAndKeyOpenAValue) {
  const std::string value("a\0b", 3);
  const std::string sealed = SealEtcdValue(kSecret, "/job/g1/0", value);
  auto opened = OpenEtcdValue(kSecret, "/job/g1/0", sealed);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(*opened, value);
  std::string tampered = sealed;
  tampered.back() ^= 1;
  for (const auto& [secret, key, text] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"another secret", "/job/g1/0", sealed},
           {kSecret, "/job/g1/1", sealed},  // moved to another key
           {kSecret, "/job/g1/0", tampered},
           {kSecret, "/job/g1/0", value},  // never sealed
           {kSecret, "/job/g1/0", ""}}) {
    auto refused = OpenEtcdValue(secret, key, text);
    ASSERT_FALSE(refused.ok()) << key;
    EXPECT_EQ(refused.status().code(), Code::kUnauthenticated);
  }
}

// What hvdrun writes is signed: the public key checks it, and neither a
// value sealed with a key workers hold nor one moved between keys passes.
TEST(EtcdValueSignTest, OnlyTheJobsSignatureForTheKeyOpensAValue) {
  auto signer = common::JobSigningKey::FromSecret(kSecret);
  ASSERT_TRUE(signer.ok());
  const std::string key = "/hvd/jobs/j/driver";
  const std::string signed_value = SignEtcdValue(*signer, key, "10.0.0.1:4000");
  auto opened = OpenSignedEtcdValue(signer->public_key(), key, signed_value);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(*opened, "10.0.0.1:4000");
  const std::string generations = common::GenerationsKey(kSecret);
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{
           {"/hvd/jobs/j/status", signed_value},  // moved
           {key, signed_value.substr(0, signed_value.size() - 1) + "9"},
           {key, SealEtcdValue(common::GenerationKey(generations, 1), key,
                               "10.6.6.6:4000")},  // a member's forgery
           {key, "10.6.6.6:4000"},
           {key, ""}}) {
    auto refused = OpenSignedEtcdValue(signer->public_key(), name, text);
    ASSERT_FALSE(refused.ok()) << name << " " << text;
    EXPECT_EQ(refused.status().code(), Code::kUnauthenticated);
    EXPECT_NE(refused.status().message().find("not signed by an hvdrun"),
              std::string::npos)
        << refused.status().message();
  }
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(member_.Start()); }
  EtcdOptions Options() const {
    return testing::EtcdOptionsFor({member_.client_port()});
  }
  testing::EtcdMember member_;
};

TEST_F(EtcdStoreTest, FourProcessesConnectGlooThroughEtcd) {
  constexpr int kSize = 4;
  hvd::testing::ChildProcesses workers;
  for (int rank = 0; rank < kSize; ++rank) {
    workers.Spawn(
        {HVD_GLOO_WORKER, std::to_string(member_.client_port()),
         std::to_string(rank), std::to_string(kSize), "/job/g1/", "etcd"},
        kSecret);
  }
  EXPECT_EQ(workers.Wait(60s), std::vector<int>(kSize, 0));
}

TEST_F(EtcdStoreTest, AForgedValueIsRefusedNotHandedToGloo) {
  EtcdClient outsider(Options());
  ASSERT_TRUE(outsider.Put("/job/g2/1", "127.0.0.1:666").ok());
  EtcdStore store(Options(), kSecret, "/job/g2/", 5s);
  EXPECT_THROW(store.wait({"1"}), gloo::InvalidOperationException);
  EXPECT_EQ(store.last_error().code(), Code::kUnauthenticated)
      << store.last_error().ToString();
}

TEST_F(EtcdStoreTest, PeersThatComeLaterAreSeenThroughOneWatch) {
  EtcdStore store(Options(), kSecret, "/job/g5/", 10s);
  store.set("0", {'a'});
  std::thread peers([this] {
    EtcdStore late(Options(), kSecret, "/job/g5/", 10s);
    late.set("1", {'b'});
    late.set("2", {'c'});
  });
  store.wait({"0", "1", "2"});
  peers.join();
  EXPECT_EQ(store.get("2"), std::vector<char>{'c'});
  // One set, then one read and one watch (or, when the peers were quicker
  // than the read, the read alone): never a poll per interval.
  EXPECT_LE(store.requests(), 3u);
}

TEST_F(EtcdStoreTest, AForgedValueThatArrivesWhileWatchingIsRefused) {
  EtcdStore store(Options(), kSecret, "/job/g6/", 10s);
  std::thread outsider([this] {
    EtcdClient etcd(Options());
    EXPECT_TRUE(etcd.Put("/job/g6/1", "127.0.0.1:666").ok());
  });
  EXPECT_THROW(store.wait({"1"}), gloo::InvalidOperationException);
  outsider.join();
  EXPECT_EQ(store.last_error().code(), Code::kUnauthenticated)
      << store.last_error().ToString();
}

TEST_F(EtcdStoreTest, AMissingPeerIsAnIoExceptionAfterTheTimeout) {
  EtcdStore store(Options(), kSecret, "/job/g3/", 300ms);
  store.set("0", {'a'});
  EXPECT_THROW(store.wait({"0", "1"}), gloo::IoException);
  EXPECT_EQ(store.last_error().code(), Code::kTimeout);
  EXPECT_NE(store.last_error().ToString().find("/job/g3/{1}"),
            std::string::npos)
      << store.last_error().ToString();
  EXPECT_EQ(store.get("0"), std::vector<char>{'a'});
}

TEST_F(EtcdStoreTest, EtcdOutOfReachIsAnIoException) {
  EtcdStore store(testing::EtcdOptionsFor({testing::FreeLoopbackPort()}, 500ms),
                  kSecret, "/job/g4/", 5s);
  EXPECT_THROW(store.set("0", {'a'}), gloo::IoException);
  EXPECT_EQ(store.last_error().code(), Code::kTimeout);
}

}  // namespace
}  // namespace hvd::rendezvous
