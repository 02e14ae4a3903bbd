#include "hvd/common/env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace hvd::common {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kName); }
  static constexpr char kName[] = "HVD_TEST_ENV_VALUE";
};

TEST_F(EnvTest, UnsetAndEmptyFallBack) {
  EXPECT_EQ(*GetEnvInt(kName, 42), 42);
  setenv(kName, "", 1);
  EXPECT_EQ(*GetEnvInt(kName, 42), 42);
  EXPECT_EQ(GetEnvString(kName, "x"), "x");
}

TEST_F(EnvTest, ParsesIntegersInRange) {
  setenv(kName, "-17", 1);
  EXPECT_EQ(*GetEnvInt(kName, 0), -17);
  setenv(kName, "5", 1);
  auto out_of_range = GetEnvInt(kName, 0, 10, 20);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find(kName), std::string::npos);
  EXPECT_NE(out_of_range.status().message().find("[10, 20]"),
            std::string::npos);
}

TEST_F(EnvTest, RejectsMalformedIntegersNamingTheVariable) {
  for (const char* bad :
       {"12abc", "abc", " 3", "1.5", "99999999999999999999"}) {
    setenv(kName, bad, 1);
    auto parsed = GetEnvInt(kName, 0);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(kName), std::string::npos);
    EXPECT_NE(parsed.status().message().find(bad), std::string::npos);
  }
}

TEST_F(EnvTest, ParsesBooleans) {
  for (const char* yes : {"1", "true", "YES", "On"}) {
    setenv(kName, yes, 1);
    EXPECT_TRUE(*GetEnvBool(kName, false)) << yes;
  }
  for (const char* no : {"0", "false", "No", "OFF"}) {
    setenv(kName, no, 1);
    EXPECT_FALSE(*GetEnvBool(kName, true)) << no;
  }
  setenv(kName, "maybe", 1);
  EXPECT_FALSE(GetEnvBool(kName, true).ok());
}

TEST_F(EnvTest, ParsesSeconds) {
  setenv(kName, "0.25", 1);
  EXPECT_EQ(GetEnvSeconds(kName, std::chrono::milliseconds(0))->count(), 250);
  setenv(kName, "-1", 1);
  EXPECT_FALSE(GetEnvSeconds(kName, std::chrono::milliseconds(0)).ok());
  setenv(kName, "inf", 1);
  EXPECT_FALSE(GetEnvSeconds(kName, std::chrono::milliseconds(0)).ok());
}

TEST(TrimBlanksTest, OnlyTheEndsLoseTheirBlanks) {
  EXPECT_EQ(TrimBlanks(" \t a b \r\n"), "a b");
  EXPECT_EQ(TrimBlanks("ab"), "ab");
  EXPECT_EQ(TrimBlanks(" \t\r\n"), "");
  EXPECT_EQ(TrimBlanks(""), "");
}

}  // namespace
}  // namespace hvd::common
