#include "options/config_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "options/option_suggestion.h"

namespace hvd::launcher {
namespace {

std::vector<std::string> WordsOf(const std::string& yaml) {
  auto settings = ParseConfigText(yaml, "c.yaml");
  EXPECT_TRUE(settings.ok()) << settings.status().ToString();
  std::vector<std::string> words;
  if (!settings.ok()) return words;
  for (const auto& setting : *settings) {
    words.insert(words.end(), setting.words.begin(), setting.words.end());
  }
  return words;
}

std::string ErrorOf(const std::string& yaml) {
  auto settings = ParseConfigText(yaml, "c.yaml");
  EXPECT_FALSE(settings.ok()) << yaml;
  return settings.ok() ? "" : settings.status().message();
}

TEST(ConfigFileTest, HorovodrunsSchemaBecomesOptions) {
  std::vector<std::string> expected = {
      "--fusion-threshold-mb=32",
      "--cycle-time-ms=2.5",
      "--cache-capacity=0",
      "--no-hierarchical-allreduce",
      "--autotune",
      "--autotune-log-file=/tmp/a.csv",
      "--autotune-warmup-samples=1",
      "--autotune-steps-per-sample=4",
      "--autotune-bayes-opt-max-samples=9",
      "--autotune-gaussian-process-noise=0.3",
      "--timeline-filename=/tmp/t.json",
      "--timeline-mark-cycles",
      "--no-stall-check",
      "--thread-affinity=2",
      "--gloo-timeout-seconds=40",
      "--log-level=DEBUG",
      "--log-without-timestamp",
      "--gloo",
  };
  EXPECT_EQ(WordsOf(R"(
params:
  fusion_threshold_mb: 32
  cycle_time_ms: 2.5
  cache_capacity: 0
  hierarchical_allreduce: false
autotune:
  enabled: true
  log_file: /tmp/a.csv
  warmup_samples: 1
  steps_per_sample: 4
  bayes_opt_max_samples: 9
  gaussian_process_noise: 0.3
timeline:
  filename: /tmp/t.json
  mark_cycles: true
stall_check:
  enabled: false
library_options:
  thread_affinity: 2
  gloo_timeout_seconds: 40
logging:
  level: DEBUG
  with_timestamp: false
controller: gloo
)"),
            expected);
}

TEST(ConfigFileTest, PresentSectionsTakeHorovodrunsDefaults) {
  // horovodrun: an autotune section without `enabled` turns autotune off,
  // a stall_check section without it leaves the check on.
  EXPECT_EQ(
      WordsOf("autotune:\n  log_file: x\n"),
      (std::vector<std::string>{"--no-autotune", "--autotune-log-file=x"}));
  EXPECT_EQ(WordsOf("stall_check:\n  warning_time_seconds: 5\n"),
            (std::vector<std::string>{"--stall-check",
                                      "--stall-check-warning-time-seconds=5"}));
  EXPECT_TRUE(WordsOf("").empty());
  EXPECT_TRUE(WordsOf("params:\n  cycle_time_ms:\n").empty());  // no value
}

TEST(ConfigFileTest, MistakesNameTheFileTheKeyAndWhatWasExpected) {
  std::string error = ErrorOf("params:\n  fusion_treshold_mb: 3\n");
  EXPECT_NE(error.find("c.yaml"), std::string::npos) << error;
  EXPECT_NE(error.find("params.fusion_treshold_mb: unknown key"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("did you mean fusion_threshold_mb?"), std::string::npos)
      << error;
  error = ErrorOf("timelin:\n  filename: x\n");
  EXPECT_NE(error.find("did you mean timeline?"), std::string::npos) << error;
  error = ErrorOf("timeline:\n  mark_cycles: maybe\n");
  EXPECT_NE(error.find("timeline.mark_cycles: expected true or false"),
            std::string::npos)
      << error;
  error = ErrorOf("params:\n  cycle_time_ms: [1, 2]\n");
  EXPECT_NE(error.find("params.cycle_time_ms: expected a single value"),
            std::string::npos)
      << error;
  error = ErrorOf("params: 3\n");
  EXPECT_NE(error.find("params: expected a map"), std::string::npos) << error;
  error = ErrorOf("- a\n- b\n");
  EXPECT_NE(error.find("expected a map of sections"), std::string::npos)
      << error;
  error = ErrorOf("params: {a: [\n");
  EXPECT_NE(error.find("not valid YAML"), std::string::npos) << error;
  error = ErrorOf("controller: ucx\n");
  EXPECT_NE(error.find("controller: expected gloo"), std::string::npos)
      << error;
}

TEST(ConfigFileTest, KeysForRefusedOptionsAreRefusedWithTheReason) {
  for (const auto& [yaml, reason] :
       std::vector<std::pair<std::string, std::string>>{
           {"controller: MPI\n", "no MPI controller"},
           {"library_options:\n  num_nccl_streams: 2\n",
            "one stream of its own"},
           {"library_options:\n  mpi_threads_disable: true\n", "MPI"},
           {"library_options:\n  mpi_threads_disable: false\n", "MPI"}}) {
    std::string error = ErrorOf(yaml);
    EXPECT_NE(error.find("refused"), std::string::npos) << error;
    EXPECT_NE(error.find(reason), std::string::npos) << error;
  }
}

TEST(ConfigFileTest, UnreadableFileIsNamed) {
  auto settings = ReadConfigFile("/nonexistent/hvd.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_NE(settings.status().message().find("/nonexistent/hvd.yaml"),
            std::string::npos);
}

TEST(OptionSuggestionTest, NearestNameWithinAFewEdits) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", "abc"), 0u);
  std::vector<std::string> names = {"--verbose", "--version", "--hosts"};
  EXPECT_EQ(ClosestName("--verbse", names), "--verbose");
  EXPECT_EQ(ClosestName("--host", names), "--hosts");
  EXPECT_EQ(ClosestName("--completely-different", names), "");
}

}  // namespace
}  // namespace hvd::launcher
