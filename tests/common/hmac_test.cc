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

class VerifyTest : public ::testing::Test {
 protected:
  Status Verify(const std::string& method, const std::string& target,
                const std::string& body, int64_t signed_at, int64_t now,
                const std::string& secret = "s3cret") {
    std::string signature =
        SignRequest("s3cret", "PUT", "/v1/kv/a/b", signed_at, "value");
    return VerifyRequest(secret, method, target, std::to_string(signed_at),
                         signature, body, now, std::chrono::seconds(60));
  }
  const int64_t t0_ = 1'700'000'000'000;
};

TEST_F(VerifyTest, AcceptsAValidSignature) {
  EXPECT_TRUE(Verify("PUT", "/v1/kv/a/b", "value", t0_, t0_ + 1000).ok());
}

TEST_F(VerifyTest, RejectsAnyChangedPart) {
  EXPECT_EQ(Verify("GET", "/v1/kv/a/b", "value", t0_, t0_).code(),
            Code::kUnauthenticated);
  EXPECT_EQ(Verify("PUT", "/v1/kv/a/c", "value", t0_, t0_).code(),
            Code::kUnauthenticated);
  EXPECT_EQ(Verify("PUT", "/v1/kv/a/b", "valuf", t0_, t0_).code(),
            Code::kUnauthenticated);
  EXPECT_EQ(Verify("PUT", "/v1/kv/a/b", "value", t0_, t0_, "other").code(),
            Code::kUnauthenticated);
}

TEST_F(VerifyTest, RejectsStaleAndFutureTimestamps) {
  Status stale = Verify("PUT", "/v1/kv/a/b", "value", t0_, t0_ + 61'000);
  EXPECT_EQ(stale.code(), Code::kUnauthenticated);
  EXPECT_NE(stale.message().find("window"), std::string::npos);
  EXPECT_FALSE(Verify("PUT", "/v1/kv/a/b", "value", t0_, t0_ - 61'000).ok());
}

TEST_F(VerifyTest, RejectsMissingOrMalformedHeaders) {
  auto window = std::chrono::seconds(60);
  EXPECT_FALSE(VerifyRequest("s", "GET", "/", "", "", "", t0_, window).ok());
  EXPECT_FALSE(
      VerifyRequest("s", "GET", "/", "12x", "ab", "", t0_, window).ok());
  EXPECT_FALSE(
      VerifyRequest("s", "GET", "/", std::to_string(t0_), "zz", "", t0_, window)
          .ok());
}

}  // namespace
}  // namespace hvd::common
