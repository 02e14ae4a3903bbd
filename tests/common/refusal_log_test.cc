// Refusals become at most one log line per interval.
#include "refusal_log.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

TEST(RefusalLogTest, NothingRefusedIsNothingToSay) {
  RefusalLog log("srv", 10'000);
  EXPECT_FALSE(log.TakeSummary(0).has_value());
  EXPECT_FALSE(log.TakeSummary(100'000).has_value());
}

TEST(RefusalLogTest, TheFirstRefusalIsReportedAtOnceThenOnePerInterval) {
  RefusalLog log("rendezvous", 10'000);
  log.Refused(401, "10.0.0.9:5000", "bad request signature");
  auto first = log.TakeSummary(1'000);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first,
            "rendezvous: refused 1 request (401: 1, dropped connections: 0); "
            "last from 10.0.0.9:5000: bad request signature");
  // A flood within the interval: counted, not logged.
  for (int i = 0; i < 5000; ++i) {
    log.Refused(i % 2 ? 401 : 400, "10.0.0.9:5001", "x");
    EXPECT_FALSE(log.TakeSummary(1'000 + i).has_value());
  }
  log.Dropped("10.0.0.8:7", "request line and headers did not arrive");
  auto second = log.TakeSummary(11'000);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second,
            "rendezvous: refused 5000 requests in the last 10 s (400: 2500, "
            "401: 2500, dropped connections: 1); last from 10.0.0.8:7: "
            "request line and headers did not arrive");
  EXPECT_FALSE(log.TakeSummary(30'000).has_value());
  // Stopping flushes what is left, interval or not.
  log.Refused(413, "p", "too big");
  EXPECT_FALSE(log.TakeSummary(11'500).has_value());
  EXPECT_TRUE(log.TakeSummary(11'501, /*flush=*/true).has_value());
  EXPECT_EQ(log.refused_total(), 5002u);
  EXPECT_EQ(log.dropped_total(), 1u);
}

TEST(RefusalLogTest, ClientBytesCannotForgeLogLines) {
  RefusalLog log("srv", 10'000);
  log.Refused(400, "p", "key 'a\nFAKE LINE\xff'");
  auto line = log.TakeSummary(0);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->find('\n'), std::string::npos) << *line;
  EXPECT_NE(line->find("a\\x0aFAKE LINE\\xff"), std::string::npos) << *line;
}

}  // namespace
}  // namespace hvd::common
