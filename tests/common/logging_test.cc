#include "hvd/common/logging.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <thread>

namespace hvd::common {
namespace {

TEST(LoggingTest, ParsesHorovodLevelNames) {
  EXPECT_EQ(*ParseLogLevel("TRACE", "x"), spdlog::level::trace);
  EXPECT_EQ(*ParseLogLevel("warning", "x"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("fatal", "x"), spdlog::level::critical);
  auto bad = ParseLogLevel("loud", "HVD_LOG_LEVEL");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HVD_LOG_LEVEL='loud'"),
            std::string::npos);
}

TEST(LoggingTest, HvdLevelWinsAndBadValuesAreReported) {
  setenv("HOROVOD_LOG_LEVEL", "error", 1);
  setenv("HVD_LOG_LEVEL", "debug", 1);
  ASSERT_TRUE(InitLogging("worker", 3).ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
  setenv("HVD_LOG_LEVEL", "chatty", 1);
  Status status = InitLogging("driver", -1);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
  unsetenv("HVD_LOG_LEVEL");
  EXPECT_TRUE(InitLogging("worker", 0).ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::err);
  unsetenv("HOROVOD_LOG_LEVEL");
}

TEST(LoggingTest, EveryLineCarriesRoleAndRank) {
  ASSERT_TRUE(InitLogging("worker", 3).ok());
  ::testing::internal::CaptureStderr();
  spdlog::warn("first");
  spdlog::error("second");
  std::string output = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(output.find("[worker 3] [warning] first"), std::string::npos)
      << output;
  EXPECT_NE(output.find("[worker 3] [error] second"), std::string::npos)
      << output;
}

// A worker re-inits logging at every elastic reset while its notification
// server's threads may be logging: the logger must stay the same object
// (spdlog's free functions use it by raw pointer), only its tag changes.
TEST(LoggingTest, ReInitKeepsTheLoggerOtherThreadsAreUsing) {
  ASSERT_TRUE(InitLogging("worker", 1).ok());
  spdlog::logger* first = spdlog::default_logger_raw();
  ::testing::internal::CaptureStderr();
  std::thread logging([] {
    for (int i = 0; i < 2000; ++i) spdlog::warn("from another thread {}", i);
  });
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(InitLogging("worker", i).ok());
  logging.join();
  ASSERT_TRUE(InitLogging("worker", 7).ok());
  spdlog::warn("after");
  std::string output = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(spdlog::default_logger_raw(), first);
  EXPECT_NE(output.find("from another thread 1999"), std::string::npos);
  EXPECT_NE(output.find("[worker 7] [warning] after"), std::string::npos)
      << output.substr(output.size() > 400 ? output.size() - 400 : 0);
}

// hvdrun's own lines: the time as the log lines have it, whatever the
// level; neither has it once SetLogTime(false) (--log-without-timestamp).
TEST(LoggingTest, AnnouncedLinesCarryTheLogTimeUnlessHidden) {
  unsetenv("HOROVOD_LOG_HIDE_TIME");
  ASSERT_TRUE(InitLogging("driver", -1).ok());
  spdlog::set_level(spdlog::level::off);  // Announce ignores the level
  ::testing::internal::CaptureStderr();
  Announce("hvdrun: with time");
  SetLogTime(false);
  Announce("hvdrun: without time");
  spdlog::set_level(spdlog::level::warn);
  spdlog::warn("a log line");
  SetLogTime(true);
  spdlog::warn("another");
  std::string output = ::testing::internal::GetCapturedStderr();
  const std::string time = R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] )";
  EXPECT_TRUE(std::regex_search(
      output, std::regex("(^|\n)" + time + "hvdrun: with time\n")))
      << output;
  EXPECT_NE(output.find("\nhvdrun: without time\n"), std::string::npos)
      << output;
  EXPECT_NE(output.find("\n[driver -] [warning] a log line\n"),
            std::string::npos)
      << output;
  EXPECT_TRUE(std::regex_search(
      output,
      std::regex("\n" + time + R"(\[driver -\] \[warning\] another\n)")))
      << output;
}

// HOROVOD_LOG_HIDE_TIME, which hvdrun passes to its workers, hides the time
// of the log lines and of Announce() alike.
TEST(LoggingTest, HideTimeVariableHidesBoth) {
  setenv("HOROVOD_LOG_HIDE_TIME", "1", 1);
  ASSERT_TRUE(InitLogging("worker", 2).ok());
  ::testing::internal::CaptureStderr();
  spdlog::warn("plain");
  Announce("also plain");
  std::string output = ::testing::internal::GetCapturedStderr();
  unsetenv("HOROVOD_LOG_HIDE_TIME");
  ASSERT_TRUE(InitLogging("worker", 2).ok());
  EXPECT_EQ(output, "[worker 2] [warning] plain\nalso plain\n");
}

TEST(LoggingTest, DecimalSecondsShowsOnlyTheDecimalsADurationHas) {
  using std::chrono::milliseconds;
  EXPECT_EQ(DecimalSeconds(milliseconds(600000)), "600");
  EXPECT_EQ(DecimalSeconds(milliseconds(1500)), "1.5");
  EXPECT_EQ(DecimalSeconds(milliseconds(250)), "0.25");
  EXPECT_EQ(DecimalSeconds(milliseconds(3001)), "3.001");
  EXPECT_EQ(DecimalSeconds(milliseconds(0)), "0");
  EXPECT_EQ(DecimalSeconds(milliseconds(-1500)), "-1.5");
  EXPECT_EQ(DecimalSeconds(milliseconds(-250)), "-0.25");
}

}  // namespace
}  // namespace hvd::common
