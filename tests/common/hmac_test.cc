#include "hvd/common/hmac.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

// RFC 4231, test case 2.
TEST(HmacTest, MatchesRfc4231Vector) {
  EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacTest, SecretsAreFreshHex) {
  auto a = NewJobSecret();
  auto b = NewJobSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
}

TEST(HmacTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(HmacTest, Sha256MatchesKnownDigests) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(HmacTest, NoncesAreFreshHex) {
  auto a = NewNonce();
  auto b = NewNonce();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), kNonceHexDigits);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
}

// The signed string of docs/protocol.md, computed independently of
// SignRequest: METHOD, TARGET, TIMESTAMP, NONCE and the body digest.
TEST(HmacTest, SignatureIsTheHmacOfTheDocumentedString) {
  const std::string nonce = "00112233445566778899aabbccddeeff";
  const std::string digest = Sha256Hex("127.0.0.1:4000");
  EXPECT_EQ(SignRequest("s3cret", "PUT", "/v1/kv/job/addr/0", 1700000000000,
                        nonce, digest),
            HmacSha256Hex("s3cret", "PUT\n/v1/kv/job/addr/0\n1700000000000\n" +
                                        nonce + "\n" + digest));
}

TEST(HmacTest, SignNewRequestMakesAFreshNonceEachTime) {
  auto a = SignNewRequest("s", "GET", "/x", "", 1000);
  auto b = SignNewRequest("s", "GET", "/x", "", 1000);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->nonce, b->nonce);
  EXPECT_NE(a->signature, b->signature);
  EXPECT_EQ(a->timestamp, "1000");
  EXPECT_EQ(a->content_sha256, Sha256Hex(""));
  auto fields = a->Fields();
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[1].first, kNonceHeader);
  EXPECT_EQ(fields[1].second, a->nonce);
}

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto headers = SignNewRequest("s3cret", "PUT", "/v1/kv/a/b", "value", t0_);
    ASSERT_TRUE(headers.ok());
    signed_ = *headers;
  }
  Result<int64_t> Verify(const std::string& method, const std::string& target,
                         int64_t now, const std::string& secret = "s3cret") {
    ReceivedSignature received{signed_.timestamp, signed_.nonce,
                               signed_.content_sha256, signed_.signature};
    return VerifyRequestHeaders(secret, method, target, received, now,
                                std::chrono::seconds(60));
  }
  const int64_t t0_ = 1'700'000'000'000;
  SignatureHeaders signed_;
};

TEST_F(VerifyTest, AcceptsAValidSignatureAndReturnsItsTime) {
  auto verified = Verify("PUT", "/v1/kv/a/b", t0_ + 1000);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(*verified, t0_);
  EXPECT_TRUE(VerifyBody(signed_.content_sha256, "value").ok());
}

TEST_F(VerifyTest, RejectsAnyChangedPart) {
  EXPECT_EQ(Verify("GET", "/v1/kv/a/b", t0_).status().code(),
            Code::kUnauthenticated);
  EXPECT_EQ(Verify("PUT", "/v1/kv/a/c", t0_).status().code(),
            Code::kUnauthenticated);
  EXPECT_EQ(Verify("PUT", "/v1/kv/a/b", t0_, "other").status().code(),
            Code::kUnauthenticated);
  // Another nonce, timestamp or digest under the same signature.
  SignatureHeaders original = signed_;
  signed_.nonce = "ffffffffffffffffffffffffffffffff";
  EXPECT_FALSE(Verify("PUT", "/v1/kv/a/b", t0_).ok());
  signed_ = original;
  signed_.timestamp = std::to_string(t0_ + 1);
  EXPECT_FALSE(Verify("PUT", "/v1/kv/a/b", t0_).ok());
  signed_ = original;
  signed_.content_sha256 = Sha256Hex("valuf");
  EXPECT_FALSE(Verify("PUT", "/v1/kv/a/b", t0_).ok());
}

TEST_F(VerifyTest, AChangedBodyFailsItsDigest) {
  Status changed = VerifyBody(signed_.content_sha256, "valuf");
  EXPECT_EQ(changed.code(), Code::kUnauthenticated);
  EXPECT_NE(changed.message().find("digest"), std::string::npos);
}

TEST_F(VerifyTest, RejectsStaleAndFutureTimestamps) {
  auto stale = Verify("PUT", "/v1/kv/a/b", t0_ + 61'000);
  EXPECT_EQ(stale.status().code(), Code::kUnauthenticated);
  EXPECT_NE(stale.status().message().find("window"), std::string::npos);
  EXPECT_FALSE(Verify("PUT", "/v1/kv/a/b", t0_ - 61'000).ok());
}

TEST_F(VerifyTest, RejectsMissingOrMalformedHeaders) {
  auto window = std::chrono::seconds(60);
  auto check = [&](ReceivedSignature received) {
    return VerifyRequestHeaders("s3cret", "PUT", "/v1/kv/a/b", received, t0_,
                                window);
  };
  const std::string ts = signed_.timestamp, nonce = signed_.nonce,
                    digest = signed_.content_sha256, sig = signed_.signature;
  EXPECT_TRUE(check({ts, nonce, digest, sig}).ok());
  EXPECT_FALSE(check({"", nonce, digest, sig}).ok());
  EXPECT_FALSE(check({ts, "", digest, sig}).ok());
  EXPECT_FALSE(check({ts, nonce, "", sig}).ok());
  EXPECT_FALSE(check({ts, nonce, digest, ""}).ok());
  for (std::string bad_ts : {"12x", "-5", " 1", "1e9", "9999999999999999999"}) {
    EXPECT_FALSE(check({bad_ts, nonce, digest, sig}).ok()) << bad_ts;
  }
  // Nonce and digest must be lower-case hex of the right length.
  EXPECT_FALSE(check({ts, nonce.substr(1), digest, sig}).ok());
  EXPECT_FALSE(
      check({ts, "ABCDEF0123456789ABCDEF0123456789", digest, sig}).ok());
  EXPECT_FALSE(check({ts, nonce, digest + "0", sig}).ok());
  EXPECT_FALSE(check({ts, nonce, digest, "zz"}).ok());
}

}  // namespace
}  // namespace hvd::common
