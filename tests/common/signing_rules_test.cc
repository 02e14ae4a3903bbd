// docs/protocol.md's signing rules, as the code keeps them: what the
// signed string holds for each header, read from the page and checked
// against VerifyRequestHeaders.
#include <gtest/gtest.h>

#include <string>

#include "hvd/common/hmac.h"

namespace hvd::common {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "s3cret";
constexpr int64_t kNow = 1700000000000;
constexpr char kNonce[] = "000102030405060708090a0b0c0d0e0f";

std::string Signed(const std::string& timestamp_text) {
  // The page: METHOD \n TARGET \n TIMESTAMP \n NONCE \n CONTENT_SHA256.
  return HmacSha256Hex(kSecret, "GET\n/v1/status\n" + timestamp_text + "\n" +
                                    kNonce + "\n" + Sha256Hex(""));
}

Result<int64_t> Verify(const std::string& header,
                       const std::string& signature) {
  const std::string digest = Sha256Hex("");
  return VerifyRequestHeaders(kSecret, "GET", "/v1/status",
                              {header, kNonce, digest, signature}, kNow, 60s);
}

// The timestamp is signed as its number in decimal, without leading
// zeros, whatever the header's text: the page said "the headers' text".
TEST(SigningRulesTest, TheTimestampIsSignedAsItsDecimalNumber) {
  EXPECT_TRUE(Verify("1700000000000", Signed("1700000000000")).ok());
  EXPECT_TRUE(Verify("01700000000000", Signed("1700000000000")).ok());
  EXPECT_EQ(Verify("01700000000000", Signed("01700000000000")).status().code(),
            Code::kUnauthenticated);
}

// 1 to 15 decimal digits, nothing else.
TEST(SigningRulesTest, TheTimestampIsOneToFifteenDigits) {
  for (const std::string& bad :
       {std::string("0001700000000000"), std::string("+1700000000000"),
        std::string(" 1700000000000"), std::string("1.7e12")}) {
    auto verified = Verify(bad, Signed(bad));
    ASSERT_FALSE(verified.ok()) << bad;
    EXPECT_NE(verified.status().message().find("is not decimal milliseconds"),
              std::string::npos)
        << verified.status().message();
  }
}

}  // namespace
}  // namespace hvd::common
