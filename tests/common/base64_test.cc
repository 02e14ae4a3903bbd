#include "hvd/common/base64.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

TEST(Base64Test, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>(i * 37));
    auto decoded = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, bytes);
  }
}

TEST(Base64Test, MatchesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, RejectsMalformedText) {
  EXPECT_FALSE(Base64Decode("abc").ok());
  EXPECT_FALSE(Base64Decode("ab!d").ok());
}

}  // namespace
}  // namespace hvd::common
