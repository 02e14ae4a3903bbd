// hvdrun's refusals of bad values: every number flag's bounds and
// malformed input, each a usage error (exit 2) that names the flag.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <string>
#include <vector>

#include "cli_test_support.h"

namespace hvd::launcher {
namespace {

using namespace cli_test;

TEST(CliTest, UnknownOptionBeforeTheCommandIsAUsageError) {
  std::string err = ErrorOf({"-np", "2", "--no-such-flag", "cmd"});
  EXPECT_NE(err.find("--no-such-flag"), std::string::npos) << err;
  ErrorOf({"-np", "2", "--"});  // no command
}

// Every number flag, every kind of bad value: a usage error that names the
// flag, shows the value as typed and the accepted range, in short numbers.
TEST(CliTest, EveryNumberFlagRejectsBadValues) {
  char script[] = "/tmp/hvd_cli_discover_XXXXXX";
  int fd = mkstemp(script);
  ASSERT_GE(fd, 0);
  close(fd);
  struct Flag {
    std::string name;                    // as the user types it
    std::vector<std::string> context;    // other flags it needs
    std::vector<std::string> extra_bad;  // values bad for this flag only
  };
  const std::vector<std::string> elastic = {"--host-discovery-script", script};
  const std::vector<Flag> flags = {
      {"-np", {}, {"0", "65537", "2147483647", "2.5"}},
      {"--num-proc", {}, {"0", "2147483647"}},
      {"--min-np", elastic, {"0", "65537"}},
      {"--max-np", elastic, {"0", "99999"}},
      {"--slots-per-host", elastic, {"0"}},
      {"-p", {}, {"0", "65536"}},
      {"--ssh-port", {}, {"70000"}},
      {"--start-timeout", {}, {"0", "604801", "1e9"}},
      {"--elastic-timeout", elastic, {"0", "-0", "1e7"}},
      {"--discovery-interval", elastic, {"0", "0.001", "3601"}},
      {"--reset-limit", elastic, {"1000001", "0.5"}},
      {"--gloo-timeout-seconds", {}, {"0", "2.5"}},
      {"--fusion-threshold-mb", {}, {"1048577"}},
      {"--cycle-time-ms", {}, {"0", "60001"}},
      {"--cache-capacity", {}, {"1048577"}},
      {"--autotune-warmup-samples", {"--autotune"}, {"1048577"}},
      {"--autotune-steps-per-sample", {"--autotune"}, {"0"}},
      {"--autotune-bayes-opt-max-samples", {"--autotune"}, {"0"}},
      {"--stall-check-warning-time-seconds", {}, {"0"}},
      {"--stall-check-shutdown-time-seconds", {}, {"604801"}},
  };
  const std::vector<std::string> bad_everywhere = {
      "nan",   "NaN",
      "inf",   "-inf",
      "-1",    "1e300",
      "1e400", "5x",
      "",      " 5",
      "5 ",    "0x10",
      "+-3",   "99999999999999999999999999999999999999999999999999"};
  for (const Flag& flag : flags) {
    std::vector<std::string> values = bad_everywhere;
    values.insert(values.end(), flag.extra_bad.begin(), flag.extra_bad.end());
    for (const std::string& value : values) {
      std::vector<std::string> args = flag.context;
      if (flag.name != "-np" && flag.name != "--num-proc") {
        args.insert(args.end(), {"-np", "1"});
      }
      args.insert(args.end(), {flag.name, value, "cmd"});
      std::string err = ErrorOf(args);
      SCOPED_TRACE(flag.name + " '" + value + "': " + err);
      std::string bare = flag.name.substr(flag.name.find_first_not_of('-'));
      EXPECT_NE(err.find(bare), std::string::npos);
      // The value as typed (long ones cut short), then the range in short
      // numbers (CLI11's own checks print 309-digit bounds).
      size_t shown = err.find("'" + value.substr(0, 40));
      ASSERT_NE(shown, std::string::npos);
      std::string rest =
          err.substr(shown + 1 + std::min<size_t>(40, value.size()));
      EXPECT_TRUE(std::regex_search(rest, std::regex(" (from|above) [0-9]")));
      EXPECT_FALSE(std::regex_search(rest, std::regex("[0-9]{8}")));
    }
  }
  std::remove(script);
}

TEST(CliTest, CooldownRangeRejectsBadNumbersInEitherPlace) {
  for (std::string bad :
       {"nan", "inf", "-1", "0", "1e300", "2.5", "5x", "",
        "99999999999999999999999999999999999999999999999999"}) {
    for (int place = 0; place < 2; ++place) {
      std::vector<std::string> range = {"3", "8"};
      range[place] = bad;
      std::string err =
          ErrorOf({"-H", "a:2", "--min-np", "1", "-np", "1",
                   "--blacklist-cooldown-range", range[0], range[1], "cmd"});
      SCOPED_TRACE("'" + range[0] + "' '" + range[1] + "': " + err);
      EXPECT_NE(err.find("blacklist-cooldown-range"), std::string::npos);
      EXPECT_FALSE(std::regex_search(err, std::regex("[0-9]{60}")));
    }
  }
}

TEST(CliTest, NumberBoundsAreAccepted) {
  CliOutcome out =
      Parse({"-np", "65536", "--start-timeout", "0.25",
             "--gloo-timeout-seconds", "604800", "--fusion-threshold-mb", "0",
             "--cycle-time-ms", "1e-3", "-p", "65535", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->num_proc, 65536);
  // Fractions of a second round up: never a timeout of 0.
  EXPECT_EQ(out.config->start_timeout, std::chrono::seconds(1));
  EXPECT_EQ(*out.config->fusion_threshold_mb, 0.0);
  EXPECT_EQ(*out.config->cycle_time_ms, 0.001);
  EXPECT_EQ(out.config->ssh_port, 65535);
}

TEST(CliTest, TheElasticTimeoutKeepsItsFraction) {
  // It stays in hvdrun (no worker's environment takes it), in milliseconds.
  CliOutcome out = Parse({"-np", "2", "--min-np", "1", "-H", "a:2",
                          "--elastic-timeout", "0.25", "cmd"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->elastic_timeout, std::chrono::milliseconds(250));
}

TEST(CliTest, NpMustLieBetweenMinAndMax) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-np", "3", "--min-np", "4", "-H", "a:8", "cmd"},
           {"-np", "5", "--min-np", "2", "--max-np", "4", "-H", "a:8", "cmd"},
           {"--min-np", "5", "--max-np", "4", "-H", "a:8", "cmd"},
           {"-np", "5", "--max-np", "4", "-H", "a:8", "cmd"},
       }) {
    std::string err = ErrorOf(args);
    EXPECT_NE(err.find("must not exceed"), std::string::npos) << err;
  }
  CliOutcome out =
      Parse({"-np", "3", "--min-np", "3", "--max-np", "3", "-H", "a:8", "c"});
  ASSERT_TRUE(out.config);
  EXPECT_EQ(out.config->num_proc, 3);
}

TEST(CliTest, DiscoveryEnvironmentIsChecked) {
  for (const char* name : {"HVD_DISCOVERY_INTERVAL", "HVD_DISCOVERY_TIMEOUT"}) {
    for (const char* value : {"nan", "1e300", "-1", "0", "2x"}) {
      ASSERT_EQ(setenv(name, value, 1), 0);
      std::string err = ErrorOf({"-np", "1", "cmd"});
      EXPECT_NE(err.find(name), std::string::npos) << err;
      EXPECT_NE(err.find(std::string("'") + value + "'"), std::string::npos)
          << err;
    }
    ASSERT_EQ(setenv(name, "0.5", 1), 0);
    CliOutcome out = Parse({"-np", "1", "cmd"});
    ASSERT_TRUE(out.config);
    EXPECT_EQ(std::string(name) == "HVD_DISCOVERY_INTERVAL"
                  ? out.config->discovery_interval
                  : out.config->discovery_timeout,
              std::chrono::milliseconds(500));
    unsetenv(name);
  }
}

}  // namespace
}  // namespace hvd::launcher
