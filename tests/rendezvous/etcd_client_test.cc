// EtcdClient against a real etcd (Debian's etcd-server, one member this
// test starts on free ports in a temporary folder and kills by its pid),
// and the gateway's JSON made and read without one.
#include "hvd/rendezvous/etcd_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "etcd_json.h"
#include "etcd_member.h"

namespace hvd::rendezvous {
namespace {

using common::Code;
using common::Status;
using namespace std::chrono_literals;

TEST(EtcdJsonTest, PrefixEndFollowsEtcdsRule) {
  EXPECT_EQ(etcd_json::PrefixEnd("hvd/job/"), "hvd/job0");
  EXPECT_EQ(etcd_json::PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(etcd_json::PrefixEnd(std::string("\xff\xff", 2)),
            std::string(1, '\0'));
  EXPECT_EQ(etcd_json::PrefixEnd(""), std::string(1, '\0'));
}

// ETCDCTL_USER and ETCDCTL_PASSWORD are outside text: not UTF-8 is
// replaced (etcd then refuses the login, saying so), never thrown.
TEST(EtcdJsonTest, CredentialsThatAreNotUtf8AreReplacedNotThrown) {
  std::string body;
  ASSERT_NO_THROW(body = etcd_json::AuthBody("u\xff", "p\xfe"));
  EXPECT_NE(body.find("\"u\xef\xbf\xbd\""), std::string::npos) << body;
}

TEST(EtcdJsonTest, AnswersAreReadWithTheirNumbersAsStrings) {
  auto kvs = etcd_json::KeyValuesOf(
      R"({"header":{"revision":"7"},"kvs":[{"key":"aHZkL2E=",)"
      R"("create_revision":"2","mod_revision":"6","version":"3",)"
      R"("value":"aGVsbG8=","lease":"12"}],"count":"1"})");
  ASSERT_TRUE(kvs.ok()) << kvs.status().ToString();
  ASSERT_EQ(kvs->size(), 1u);
  EXPECT_EQ((*kvs)[0].key, "hvd/a");
  EXPECT_EQ((*kvs)[0].value, "hello");
  EXPECT_EQ((*kvs)[0].create_revision, 2);
  EXPECT_EQ((*kvs)[0].mod_revision, 6);
  EXPECT_EQ((*kvs)[0].version, 3);
  EXPECT_EQ((*kvs)[0].lease, 12);
  // No kvs: an empty range (protobuf's JSON leaves empty lists out).
  auto none = etcd_json::KeyValuesOf(R"({"header":{"revision":"7"}})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(EtcdJsonTest, MalformedAnswersAreErrorsNotCrashes) {
  for (const char* body :
       {"", "[]", "not json", R"({"kvs":"x"})", R"({"kvs":[{"key":"%%"}]})",
        R"({"kvs":[{"create_revision":"seven"}]})", R"({"kvs":[1]})"}) {
    EXPECT_FALSE(etcd_json::KeyValuesOf(body).ok()) << body;
  }
  EXPECT_FALSE(etcd_json::RevisionOf(R"({"no":"header"})").ok());
  EXPECT_FALSE(etcd_json::TxnResultOf(R"({"header":{},"responses":3})").ok());
  EXPECT_FALSE(etcd_json::LeaseIdOf(R"({"header":{},"ID":"0"})").ok());
  EXPECT_FALSE(etcd_json::TokenOf(R"({"header":{}})").ok());
}

TEST(EtcdJsonTest, GatewayErrorsBecomeStatuses) {
  auto error =
      etcd_json::ErrorOf(R"({"error":"etcdserver: no leader","code":14,)"
                         R"("message":"etcdserver: no leader"})");
  ASSERT_TRUE(error.has_value());
  EXPECT_TRUE(etcd_json::TryAnotherMember(*error));
  EXPECT_EQ(etcd_json::StatusOf(*error).code(), Code::kTransport);
  auto auth = etcd_json::ErrorOf(
      R"({"error":"etcdserver: invalid auth token","code":16})");
  ASSERT_TRUE(auth.has_value());
  EXPECT_FALSE(etcd_json::TryAnotherMember(*auth));
  EXPECT_EQ(etcd_json::StatusOf(*auth).code(), Code::kUnauthenticated);
  EXPECT_FALSE(etcd_json::ErrorOf(R"({"header":{}})").has_value());
}

TEST(EtcdJsonTest, WatchMessagesGiveThePutsAndLeaveDeletesOut) {
  // Lines as etcd 3.4's gateway writes them (one JSON object per line).
  auto created = etcd_json::WatchMessageOf(
      R"({"result":{"header":{"revision":"1"},"created":true}})");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(created->puts.empty());
  EXPECT_FALSE(created->canceled);
  auto put = etcd_json::WatchMessageOf(
      R"({"result":{"header":{"revision":"3"},"events":[)"
      R"({"kv":{"key":"YTE=","create_revision":"2","mod_revision":"3",)"
      R"("version":"2","value":"djE="}},)"
      R"({"type":"DELETE","kv":{"key":"YTI=","mod_revision":"3"}}]}})");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->puts.size(), 1u);
  EXPECT_EQ(put->puts[0].key, "a1");
  EXPECT_EQ(put->puts[0].value, "v1");
  EXPECT_EQ(put->puts[0].mod_revision, 3);
  auto compacted = etcd_json::WatchMessageOf(
      R"({"result":{"header":{},"canceled":true,"compact_revision":"9"}})");
  ASSERT_TRUE(compacted.ok());
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 9);
  auto error = etcd_json::WatchMessageOf(
      R"({"error":{"grpc_code":14,"message":"no leader"},"code":14})");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), Code::kTransport);
  for (const char* bad :
       {"", "{", R"({"result":3})", R"({"result":{"events":{}}})",
        R"({"result":{"events":[{"kv":{"key":"%%"}}]}})",
        R"({"result":{"events":[{"type":"PUT"}]}})"}) {
    EXPECT_FALSE(etcd_json::WatchMessageOf(bad).ok()) << bad;
  }
}

TEST(EtcdEndpointsTest, TorchrunsFormWithOrWithoutSchemes) {
  auto parsed =
      ParseEtcdEndpoints("etcd1:2379,https://10.0.0.5:2380,http://etcd-3");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].Url(), "http://etcd1:2379");
  EXPECT_EQ((*parsed)[1].Url(), "https://10.0.0.5:2380");
  EXPECT_EQ((*parsed)[2].Url(), "http://etcd-3:2379");
  for (const char* bad : {"", "etcd1:", "etcd1:0", "etcd1:65536", "a,,b",
                          "etcd 1:2379", "ftp://etcd1:2379", "etcd1:23x9"}) {
    auto refused = ParseEtcdEndpoints(bad);
    EXPECT_FALSE(refused.ok()) << bad;
    if (!refused.ok()) {
      EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad;
    }
  }
}

// etcdctl's variables, set for one test and restored after it.
class EtcdctlEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"ETCDCTL_USER", "ETCDCTL_PASSWORD",
                             "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY"}) {
      unsetenv(name);
    }
  }
};

TEST_F(EtcdctlEnvironmentTest, CredentialsComeFromEtcdctlsVariables) {
  auto none = EtcdOptionsFromEnvironment("e1:2379");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->endpoints.size(), 1u);
  EXPECT_EQ(none->user, "");
  EXPECT_EQ(none->ca_file, "");
  setenv("ETCDCTL_USER", "hvd:s3cret:x", 1);
  setenv("ETCDCTL_PASSWORD", "ignored", 1);
  setenv("ETCDCTL_CACERT", "/ca.pem", 1);
  setenv("ETCDCTL_CERT", "/c.pem", 1);
  setenv("ETCDCTL_KEY", "/c.key", 1);
  auto all = EtcdOptionsFromEnvironment("https://e1:2379,e2:2379");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->endpoints.size(), 2u);
  EXPECT_EQ(all->user, "hvd");
  EXPECT_EQ(all->password, "s3cret:x");  // etcdctl splits at the first ':'
  EXPECT_EQ(all->ca_file, "/ca.pem");
  EXPECT_EQ(all->cert_file, "/c.pem");
  EXPECT_EQ(all->key_file, "/c.key");
  setenv("ETCDCTL_USER", "hvd", 1);
  auto split = EtcdOptionsFromEnvironment("e1:2379");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->password, "ignored");
}

TEST_F(EtcdctlEnvironmentTest, HalfACredentialIsRefusedNamingTheVariable) {
  setenv("ETCDCTL_PASSWORD", "p", 1);
  auto password = EtcdOptionsFromEnvironment("e1:2379");
  ASSERT_FALSE(password.ok());
  EXPECT_NE(password.status().message().find("ETCDCTL_USER names no user"),
            std::string::npos);
  unsetenv("ETCDCTL_PASSWORD");
  setenv("ETCDCTL_CERT", "/c.pem", 1);
  auto cert = EtcdOptionsFromEnvironment("e1:2379");
  ASSERT_FALSE(cert.ok());
  EXPECT_NE(cert.status().message().find("ETCDCTL_CERT and ETCDCTL_KEY"),
            std::string::npos);
  EXPECT_FALSE(EtcdOptionsFromEnvironment("e1:0").ok());
}

using testing::EtcdOptionsFor;
using testing::FreeLoopbackPort;

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(member_.Start()); }

  static EtcdOptions Options(const std::vector<int>& ports,
                             std::chrono::milliseconds deadline = 5s) {
    return EtcdOptionsFor(ports, deadline);
  }

  int port() const { return member_.client_port(); }

  testing::EtcdMember member_;
};

TEST_F(EtcdClientTest, PutRangeAndDeleteBinaryKeysUnderAPrefix) {
  EtcdClient etcd(Options({port()}));
  const std::string odd("v\0\xff", 3);
  auto first = etcd.Put("job/a", odd);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = etcd.Put("job/b", "2");
  ASSERT_TRUE(second.ok());
  EXPECT_GT(*second, *first);
  ASSERT_TRUE(etcd.Put("jobs", "outside the prefix").ok());
  auto found = etcd.Range("job/", /*prefix=*/true);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].key, "job/a");
  EXPECT_EQ((*found)[0].value, odd);
  EXPECT_EQ((*found)[1].mod_revision, *second);
  auto deleted = etcd.Delete("job/", /*prefix=*/true);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2);
  EXPECT_TRUE(etcd.Range("job/", true)->empty());
  EXPECT_EQ(etcd.Range("jobs")->size(), 1u);
}

TEST_F(EtcdClientTest, ATransactionCreatesOnceAndReadsWhatIsThere) {
  EtcdClient etcd(Options({port()}));
  EtcdCompare absent;
  absent.key = "leader";
  absent.target = EtcdCompare::Target::kCreateRevision;
  absent.number = 0;
  EtcdOp claim;
  claim.kind = EtcdOp::Kind::kPut;
  claim.key = "leader";
  EtcdOp read;
  read.key = "leader";
  claim.value = "first";
  auto won = etcd.Txn({absent}, {claim}, {read});
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  EXPECT_TRUE(won->succeeded);
  claim.value = "second";
  auto lost = etcd.Txn({absent}, {claim}, {read});
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(lost->succeeded);
  ASSERT_EQ(lost->ranges.size(), 1u);
  ASSERT_EQ(lost->ranges[0].size(), 1u);
  EXPECT_EQ(lost->ranges[0][0].value, "first");
  EXPECT_EQ(lost->ranges[0][0].mod_revision, won->revision);
}

TEST_F(EtcdClientTest, ALeaseKeepsItsKeysUntilRevoked) {
  EtcdClient etcd(Options({port()}));
  auto lease = etcd.GrantLease(30);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_TRUE(etcd.Put("alive", "yes", *lease).ok());
  auto ttl = etcd.KeepAlive(*lease);
  ASSERT_TRUE(ttl.ok()) << ttl.status().ToString();
  EXPECT_GT(*ttl, 0);
  EXPECT_EQ(etcd.Range("alive")->at(0).lease, *lease);
  ASSERT_TRUE(etcd.RevokeLease(*lease).ok());
  EXPECT_TRUE(etcd.Range("alive")->empty());
  auto gone = etcd.KeepAlive(*lease);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Code::kNotFound) << gone.status().ToString();
}

TEST_F(EtcdClientTest, AWatchHandsOnLaterPutsUntilToldToStop) {
  EtcdClient etcd(Options({port()}));
  auto before = etcd.Put("/w/old", "0");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  std::thread writer([this] {
    EtcdClient other(Options({port()}));
    for (const char* key : {"/w/a", "/other", "/w/b", "/w/c"}) {
      EXPECT_TRUE(other.Put(key, key).ok());
    }
  });
  std::vector<std::string> seen;
  Status watched = etcd.Watch("/w/", true, *before + 1, 10s, [&](auto puts) {
    for (const EtcdKeyValue& kv : puts) seen.push_back(kv.value);
    return seen.size() < 2;
  });
  writer.join();
  EXPECT_TRUE(watched.ok()) << watched.ToString();
  // From the revision after /w/old, in order; /other is not under the
  // prefix. It stopped after the batch that held the second, which may
  // have held the third too (etcd sends what has committed together).
  const std::vector<std::string> two = {"/w/a", "/w/b"};
  const std::vector<std::string> three = {"/w/a", "/w/b", "/w/c"};
  EXPECT_TRUE(seen == two || seen == three) << ::testing::PrintToString(seen);
  Status quiet =
      etcd.Watch("/none/", true, 0, 300ms, [](auto) { return true; });
  EXPECT_EQ(quiet.code(), Code::kTimeout) << quiet.ToString();
}

TEST_F(EtcdClientTest, AnUnreachableEndpointIsPassedOver) {
  const int dead = FreeLoopbackPort();
  EtcdClient etcd(Options({dead, port()}));
  auto put = etcd.Put("k", "v");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
}

TEST_F(EtcdClientTest, NoReachableMemberIsATimeoutNamingTheEndpoints) {
  const int dead = FreeLoopbackPort();
  EtcdClient etcd(Options({dead}, 1s));
  auto put = etcd.Put("k", "v");
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), Code::kTimeout);
  EXPECT_NE(put.status().ToString().find(std::to_string(dead)),
            std::string::npos)
      << put.status().ToString();
}

TEST_F(EtcdClientTest, AnAnswerOverTheBoundIsRefused) {
  EtcdClient writer(Options({port()}));
  ASSERT_TRUE(writer.Put("big", std::string(64 << 10, 'x')).ok());
  EtcdOptions small = Options({port()});
  small.max_response_bytes = 16 << 10;
  EtcdClient reader(small);
  auto read = reader.Range("big");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kResourceExhausted);
}

TEST_F(EtcdClientTest, WithAuthenticationOnOnlyItsUserGetsIn) {
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(port());
  for (const std::string& step :
       {std::string("user add root:s3cret"), std::string("auth enable")}) {
    const std::string command =
        "etcdctl --endpoints " + endpoint + " " + step + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0)
        << command << " (etcdctl: apt-get install etcd-client)";
  }
  EtcdOptions options = Options({port()});
  options.user = "root";
  options.password = "s3cret";
  EtcdClient member(options);
  ASSERT_TRUE(member.Put("guarded", "1").ok());
  EXPECT_EQ(member.Range("guarded")->size(), 1u);
  EtcdClient stranger(Options({port()}));
  auto refused = stranger.Put("guarded", "2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated)
      << refused.status().ToString();
  options.password = "wrong";
  EtcdClient guesser(options);
  auto wrong = guesser.Range("guarded");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kUnauthenticated)
      << wrong.status().ToString();
  EXPECT_NE(wrong.status().ToString().find("as 'root'"), std::string::npos)
      << wrong.status().ToString();
  EXPECT_EQ(member.Range("guarded")->at(0).value, "1");
}

// A member that speaks TLS only and wants a client certificate from its CA;
// the certificates are made with the openssl tool in a temporary folder.
class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/hvd-etcd-tls-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    dir_ = folder;
    ASSERT_NO_FATAL_FAILURE(MakeCa("ca"));
    ASSERT_NO_FATAL_FAILURE(MakeCa("stranger-ca"));
    // etcd's gateway calls its own gRPC side with the member's certificate,
    // so that is a client certificate too.
    ASSERT_NO_FATAL_FAILURE(Sign("ca", "server",
                                 "subjectAltName=IP:127.0.0.1\n"
                                 "extendedKeyUsage=serverAuth,clientAuth\n"));
    ASSERT_NO_FATAL_FAILURE(
        Sign("ca", "client", "extendedKeyUsage=clientAuth\n"));
    ASSERT_NO_FATAL_FAILURE(
        Sign("stranger-ca", "stranger", "extendedKeyUsage=clientAuth\n"));
    testing::EtcdMemberTls tls;
    tls.ca_file = File("ca.crt");
    tls.cert_file = File("server.crt");
    tls.key_file = File("server.key");
    tls.client_cert_file = File("client.crt");
    tls.client_key_file = File("client.key");
    ASSERT_NO_FATAL_FAILURE(member_.Start(tls));
  }

  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  void Run(const std::string& command) {
    const std::string quiet = command + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(quiet.c_str()), 0)
        << command << " (the openssl tool: apt-get install openssl)";
  }

  void MakeCa(const std::string& name) {
    Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name +
        " -keyout " + File(name + ".key") + " -out " + File(name + ".crt"));
  }

  void Sign(const std::string& ca, const std::string& name,
            const std::string& extensions) {
    std::FILE* ext = std::fopen(File(name + ".ext").c_str(), "w");
    ASSERT_NE(ext, nullptr);
    std::fputs(extensions.c_str(), ext);
    std::fclose(ext);
    Run("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " +
        File(name + ".key") + " -out " + File(name + ".csr"));
    Run("openssl x509 -req -days 1 -in " + File(name + ".csr") + " -CA " +
        File(ca + ".crt") + " -CAkey " + File(ca + ".key") +
        " -CAcreateserial -extfile " + File(name + ".ext") + " -out " +
        File(name + ".crt"));
  }

  std::string dir_;
  testing::EtcdMember member_;
};

TEST_F(EtcdTlsTest, AClientWithTheClustersCaAndACertificateGetsIn) {
  EtcdClient etcd(member_.ClientOptions());
  ASSERT_TRUE(etcd.Put("over-tls", "yes").ok());
  auto read = etcd.Range("over-tls");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(read->at(0).value, "yes");
}

TEST_F(EtcdTlsTest, NoCertificateOrAnotherCasOneIsRefused) {
  EtcdOptions bare = member_.ClientOptions(1s);
  bare.cert_file.clear();
  bare.key_file.clear();
  EXPECT_FALSE(EtcdClient(bare).Put("k", "v").ok());
  EtcdOptions stranger = member_.ClientOptions(1s);
  stranger.cert_file = File("stranger.crt");
  stranger.key_file = File("stranger.key");
  EXPECT_FALSE(EtcdClient(stranger).Put("k", "v").ok());
  // Nor does the client trust a member whose certificate is not from the
  // CA it was given.
  EtcdOptions distrustful = member_.ClientOptions(1s);
  distrustful.ca_file = File("stranger-ca.crt");
  EXPECT_FALSE(EtcdClient(distrustful).Put("k", "v").ok());
  EXPECT_TRUE(EtcdClient(member_.ClientOptions()).Range("k")->empty());
}

}  // namespace
}  // namespace hvd::rendezvous
