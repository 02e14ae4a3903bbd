#include "tuning/parameter_manager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace hvd::runtime {
namespace {

using std::chrono::microseconds;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kBytesPerCycle = 4 * kMiB;

// Throughput in bytes/s of the job when run with `params`.
using Throughput = std::function<double(const TunableParams&)>;

// A smooth, separable response with one peak at 32 MiB, 2.5 ms, cache off:
// Gaussian in log2(fusion threshold) and in log(cycle time).
double Peaked(const TunableParams& p) {
  double mib = p.fusion_threshold == 0
                   ? 0.25
                   : static_cast<double>(p.fusion_threshold) / kMiB;
  double f = std::log2(mib / 32);
  double c = std::log(p.cycle_time.count() / 2500.0);
  return 1e9 * std::exp(-f * f / 8) * std::exp(-c * c) *
         (p.cache_enabled ? 0.9 : 1.0);
}

struct DriveResult {
  int cycles = 0;                      // Record() calls until tuning ended
  int changes = 0;                     // Record() returned true
  std::vector<TunableParams> applied;  // current() after each change
};

// Drives `manager` like rank 0's loop: every cycle moves kBytesPerCycle and
// lasts as long as `throughput(current())` says, times `noise()`.
// `before_cycle(i)` may override a cycle's duration factor (warm-up).
DriveResult Drive(
    ParameterManager& manager, const Throughput& throughput,
    const std::function<double()>& noise = [] { return 1.0; },
    const std::function<double(int)>& slowdown = [](int) { return 1.0; },
    int limit = 100000) {
  DriveResult run;
  Clock::time_point now{};
  while (manager.tuning() && run.cycles < limit) {
    TunableParams before = manager.current();
    double seconds =
        kBytesPerCycle / throughput(before) * noise() * slowdown(run.cycles);
    now += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds));
    bool changed = manager.Record(kBytesPerCycle, now);
    ++run.cycles;
    EXPECT_EQ(changed, manager.current() != before)
        << "Record() must return true exactly when current() changes (cycle "
        << run.cycles << ")";
    if (changed) {
      ++run.changes;
      run.applied.push_back(manager.current());
    }
  }
  return run;
}

std::unique_ptr<ParameterManager> Make(ParameterManager::Options options) {
  auto manager = ParameterManager::Create(std::move(options));
  EXPECT_TRUE(manager.ok()) << manager.status().ToString();
  return std::move(*manager);
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  for (std::string field; std::getline(stream, field, ',');) {
    fields.push_back(field);
  }
  return fields;
}

std::string TempPath(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::remove(path.c_str());
  return path;
}

int IndexIn(const std::vector<int64_t>& grid, int64_t value) {
  for (size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] == value) return static_cast<int>(i);
  }
  return -100;
}

const std::vector<int64_t> kFusionGrid = {
    0,         kMiB,      2 * kMiB,  4 * kMiB,   8 * kMiB,
    16 * kMiB, 32 * kMiB, 64 * kMiB, 128 * kMiB, 256 * kMiB};
const std::vector<int64_t> kCycleGridUs = {500, 1000, 2500, 5000, 10000};

TEST(ParameterManagerTest, HierarchicalAllreduceIsTunedOnlyWhereOffered) {
  // Shared memory helps up to 32 MiB fusion buffers here, hurts above.
  Throughput mixed = [](const TunableParams& p) {
    const bool big = p.fusion_threshold > 32 * kMiB;
    return Peaked(p) * (p.hierarchical_allreduce == big ? 0.5 : 1.0);
  };
  ParameterManager::Options options;
  options.tune_hierarchical_allreduce = true;
  auto manager = Make(options);
  Drive(*manager, mixed);
  ASSERT_FALSE(manager->tuning());
  EXPECT_TRUE(manager->current().hierarchical_allreduce);
  EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB);

  Throughput off_wins = [](const TunableParams& p) {
    return Peaked(p) * (p.hierarchical_allreduce ? 0.5 : 1.0);
  };
  manager = Make(options);
  Drive(*manager, off_wins);
  EXPECT_FALSE(manager->current().hierarchical_allreduce);
  options.tune_hierarchical_allreduce = false;
  manager = Make(options);
  Drive(*manager, off_wins);
  EXPECT_TRUE(manager->current().hierarchical_allreduce);
}

TEST(ParameterManagerTest, FindsTheOptimumOfASmoothResponse) {
  ParameterManager::Options options;
  auto manager = Make(options);
  EXPECT_TRUE(manager->tuning());
  EXPECT_EQ(manager->current(), options.initial);
  DriveResult run = Drive(*manager, Peaked);
  ASSERT_FALSE(manager->tuning());
  EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB);
  EXPECT_EQ(manager->current().cycle_time, microseconds(2500));
  EXPECT_FALSE(manager->current().cache_enabled);
  // Each change but the last one (the best applied) starts a trial.
  EXPECT_LE(run.changes, options.max_samples);
}

// Fusion threshold and cycle time interact: the best threshold grows with
// the cycle time (8 MiB per ms), the best cycle time is 5 ms. From the
// start, one coordinate at a time climbs to (16 MiB, 2.5 ms), where every
// single-coordinate step is worse; only the diagonal step reaches the
// optimum (32 MiB, 5 ms).
double Ridge(const TunableParams& p) {
  double mib = p.fusion_threshold == 0
                   ? 0.25
                   : static_cast<double>(p.fusion_threshold) / kMiB;
  double ms = p.cycle_time.count() / 1000.0;
  double f = std::log2(mib / (8 * ms));
  double c = std::log(ms / 5);
  return 1e9 * std::exp(-f * f / 2) * std::exp(-c * c / 2) *
         (p.cache_enabled ? 1.0 : 0.95);
}

TEST(ParameterManagerTest, FollowsARidgeOfFusionAndCycleTime) {
  for (int budget : {20, 40}) {
    ParameterManager::Options options;
    options.max_samples = budget;
    options.log_path = TempPath("autotune_ridge.csv");
    auto manager = Make(options);
    Drive(*manager, Ridge);
    ASSERT_FALSE(manager->tuning());
    EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB) << budget;
    EXPECT_EQ(manager->current().cycle_time, microseconds(5000)) << budget;
    EXPECT_TRUE(manager->current().cache_enabled) << budget;
    size_t trials = ReadLines(options.log_path).size() - 2;
    EXPECT_LE(trials, static_cast<size_t>(budget));
    if (budget == 40) {
      EXPECT_LT(trials, 40u) << "the search converges";
    }
  }
}

TEST(ParameterManagerTest, ParametersStayFixedAfterTuning) {
  auto manager = Make({});
  Drive(*manager, Peaked);
  ASSERT_FALSE(manager->tuning());
  TunableParams best = manager->current();
  Clock::time_point now = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    now += std::chrono::milliseconds(1);
    EXPECT_FALSE(manager->Record(i % 2 ? 0 : kBytesPerCycle, now));
  }
  EXPECT_EQ(manager->current(), best);
  EXPECT_FALSE(manager->tuning());
}

TEST(ParameterManagerTest, RespectsTheBudget) {
  // Smaller fusion thresholds are always better: the walk would go on down
  // to 0, but only four trials may be scored.
  Throughput falling = [](const TunableParams& p) {
    return 1e9 / (1 + static_cast<double>(p.fusion_threshold) / kMiB);
  };
  ParameterManager::Options options;
  options.max_samples = 4;
  options.warmup_samples = 2;
  options.cycles_per_sample = 5;
  options.tune_cycle_time = false;
  options.tune_cache = false;
  options.log_path = TempPath("autotune_budget.csv");
  auto manager = Make(options);
  DriveResult run = Drive(*manager, falling);
  ASSERT_FALSE(manager->tuning());
  auto lines = ReadLines(options.log_path);
  ASSERT_EQ(lines.size(), 1u + 4u + 1u);  // header, trials, best
  // Trials: 128 MiB, 256 (worse), 64, 32; the best is 32 MiB.
  EXPECT_EQ(Split(lines[1])[1], std::to_string(128 * kMiB));
  EXPECT_EQ(Split(lines[2])[1], std::to_string(256 * kMiB));
  EXPECT_EQ(Split(lines[3])[1], std::to_string(64 * kMiB));
  EXPECT_EQ(Split(lines[4])[1], std::to_string(32 * kMiB));
  EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB);
  // The last trial was the best: nothing to apply at the end.
  EXPECT_EQ(run.changes, 3);
  // 1 cycle to start the clock, the warm-up, 4 scored samples and one
  // discarded sample after each of the 3 changes.
  EXPECT_EQ(run.cycles, 1 + 5 * (2 + 4 + 3));
}

TEST(ParameterManagerTest, NeverScoresMoreThanTheBudget) {
  for (int budget = 1; budget <= 25; ++budget) {
    ParameterManager::Options options;
    options.max_samples = budget;
    options.warmup_samples = 1;
    options.cycles_per_sample = 2;
    options.log_path = TempPath("autotune_never_more.csv");
    auto manager = Make(options);
    DriveResult run = Drive(*manager, Peaked);
    ASSERT_FALSE(manager->tuning());
    size_t trials = ReadLines(options.log_path).size() - 2;
    EXPECT_LE(trials, static_cast<size_t>(budget));
    EXPECT_LE(run.changes, budget);
    EXPECT_LE(run.cycles, 1 + 2 * (1 + 2 * budget - 1));
  }
}

TEST(ParameterManagerTest, WarmupSamplesAreNotScored) {
  // The first 3 samples (30 cycles after the clock starts) run 100 times
  // faster; if any were scored, the initial parameters would win.
  ParameterManager::Options options;
  options.log_path = TempPath("autotune_warmup.csv");
  auto manager = Make(options);
  Drive(
      *manager, Peaked, [] { return 1.0; },
      [](int cycle) { return cycle <= 30 ? 0.01 : 1.0; });
  ASSERT_FALSE(manager->tuning());
  EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB);
  auto lines = ReadLines(options.log_path);
  ASSERT_GE(lines.size(), 3u);
  // The first scored trial is the initial parameters at their true speed.
  double first = std::stod(Split(lines[1])[5]);
  EXPECT_NEAR(first, Peaked(options.initial), 1e-5 * first);
}

TEST(ParameterManagerTest, SampleAfterAChangeIsNotScored) {
  // The first sample after each change is 100 times slower (buffer
  // reallocation, stale ranks). Scored, it would make every move look bad
  // and the search would stay at the start.
  ParameterManager::Options options;
  auto manager = Make(options);
  TunableParams last = manager->current();
  int since_change = 0;
  Clock::time_point now{};
  int cycles = 0;
  while (manager->tuning() && cycles < 100000) {
    double seconds = kBytesPerCycle / Peaked(manager->current());
    if (since_change < options.cycles_per_sample && cycles > 0 &&
        manager->current() != options.initial) {
      seconds *= 100;
    }
    now += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds));
    manager->Record(kBytesPerCycle, now);
    ++cycles;
    ++since_change;
    if (manager->current() != last) {
      last = manager->current();
      since_change = 0;
    }
  }
  ASSERT_FALSE(manager->tuning());
  EXPECT_EQ(manager->current().fusion_threshold, 32 * kMiB);
  EXPECT_EQ(manager->current().cycle_time, microseconds(2500));
}

TEST(ParameterManagerTest, NoisyMeasurementsEndWithinOneGridStep) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    // Each cycle's duration varies by a log-normal factor, sigma 20%.
    std::lognormal_distribution<double> factor(0.0, 0.2);
    auto manager = Make({});
    Drive(*manager, Peaked, [&] { return factor(rng); });
    ASSERT_FALSE(manager->tuning());
    const TunableParams& got = manager->current();
    EXPECT_LE(std::abs(IndexIn(kFusionGrid, got.fusion_threshold) -
                       IndexIn(kFusionGrid, 32 * kMiB)),
              1)
        << "seed " << seed << ": " << got.fusion_threshold;
    std::vector<int64_t> cycles = kCycleGridUs;
    EXPECT_LE(std::abs(IndexIn(cycles, got.cycle_time.count()) -
                       IndexIn(cycles, 2500)),
              1)
        << "seed " << seed << ": " << got.cycle_time.count();
  }
}

TEST(ParameterManagerTest, LogHasHeaderTrialsAndTheBest) {
  ParameterManager::Options options;
  options.log_path = TempPath("autotune_log.csv");
  auto manager = Make(options);
  DriveResult run = Drive(*manager, Peaked);
  ASSERT_FALSE(manager->tuning());
  auto lines = ReadLines(options.log_path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "trial,fusion_threshold_bytes,cycle_time_ms,cache_enabled,"
            "hierarchical_allreduce,throughput_bytes_per_s,best");
  size_t trials = lines.size() - 2;
  EXPECT_LE(trials, static_cast<size_t>(options.max_samples));
  // Trial lines, numbered from 0; every trial a different point, each at the
  // throughput its parameters have; the first is the initial parameters.
  double best_throughput = 0;
  std::string best_line;
  std::set<std::string> points;
  for (size_t i = 1; i <= trials; ++i) {
    auto fields = Split(lines[i]);
    ASSERT_EQ(fields.size(), 7u) << lines[i];
    EXPECT_EQ(fields[0], std::to_string(i - 1));
    // Not offered: stays at its initial value.
    EXPECT_EQ(fields[4], "1");
    EXPECT_EQ(fields[6], "0");
    TunableParams p;
    p.fusion_threshold = std::stoll(fields[1]);
    p.cycle_time = microseconds(std::llround(std::stod(fields[2]) * 1000));
    p.cache_enabled = fields[3] == "1";
    EXPECT_TRUE(points.insert(fields[1] + fields[2] + fields[3]).second)
        << "measured twice: " << lines[i];
    double throughput = std::stod(fields[5]);
    EXPECT_NEAR(throughput, Peaked(p), 1e-5 * throughput) << lines[i];
    if (i == 1) {
      EXPECT_EQ(p, options.initial);
    }
    if (throughput > best_throughput) {
      best_throughput = throughput;
      best_line = lines[i];
    }
  }
  // The last line repeats the best trial, marked.
  std::string expected_best = best_line.substr(0, best_line.size() - 1) + "1";
  EXPECT_EQ(lines.back(), expected_best);
  EXPECT_EQ(lines.back(), "7,33554432,2.5,0,1,1000000000,1");
  // Changes: one per trial after the first, plus the best applied at the
  // end if the last trial was not it.
  EXPECT_GE(run.changes, static_cast<int>(trials) - 1);
  EXPECT_LE(run.changes, static_cast<int>(trials));
}

TEST(ParameterManagerTest, LogIsAppendedToWithOneHeader) {
  ParameterManager::Options options;
  options.max_samples = 2;
  options.log_path = TempPath("autotune_append.csv");
  for (int run = 0; run < 2; ++run) {
    auto manager = Make(options);
    Drive(*manager, Peaked);
  }
  auto lines = ReadLines(options.log_path);
  ASSERT_EQ(lines.size(), 1u + 2 * (2u + 1u));
  EXPECT_EQ(lines[0].rfind("trial,", 0), 0u);
  EXPECT_EQ(lines[4].rfind("0,", 0), 0u);
}

TEST(ParameterManagerTest, FixedCoordinatesKeepTheirInitialValue) {
  ParameterManager::Options options;
  options.initial.fusion_threshold = 100 * kMiB;  // off the grid
  options.initial.cycle_time = microseconds(3000);
  options.tune_fusion_threshold = false;
  options.tune_cache = false;
  auto manager = Make(options);
  DriveResult run = Drive(*manager, Peaked);
  ASSERT_FALSE(manager->tuning());
  EXPECT_EQ(manager->current().fusion_threshold, 100 * kMiB);
  EXPECT_TRUE(manager->current().cache_enabled);
  EXPECT_EQ(manager->current().cycle_time, microseconds(2500));
  for (const auto& params : run.applied) {
    EXPECT_EQ(params.fusion_threshold, 100 * kMiB);
    EXPECT_TRUE(params.cache_enabled);
  }
}

TEST(ParameterManagerTest, OffGridInitialValuesAreMeasuredAndCanWin) {
  // Peak exactly at the off-grid start: every neighbour is worse, and the
  // search returns to the start at the end.
  ParameterManager::Options options;
  options.initial.fusion_threshold = 100 * kMiB;
  options.initial.cycle_time = microseconds(3000);
  Throughput at_start = [&](const TunableParams& p) {
    double f =
        std::log2(static_cast<double>(p.fusion_threshold + 1) / (100 * kMiB));
    double c = std::log(p.cycle_time.count() / 3000.0);
    return 1e9 / (1 + f * f + c * c) * (p.cache_enabled ? 1.0 : 0.5);
  };
  auto manager = Make(options);
  DriveResult run = Drive(*manager, at_start);
  ASSERT_FALSE(manager->tuning());
  EXPECT_EQ(manager->current(), options.initial);
  ASSERT_FALSE(run.applied.empty());
  EXPECT_EQ(run.applied.back(), options.initial);
}

TEST(ParameterManagerTest, CreateRejectsBadOptions) {
  auto expect_bad = [](ParameterManager::Options options,
                       const std::string& word) {
    auto manager = ParameterManager::Create(std::move(options));
    ASSERT_FALSE(manager.ok());
    EXPECT_EQ(manager.status().code(), common::Code::kInvalidArgument);
    EXPECT_NE(manager.status().message().find(word), std::string::npos)
        << manager.status().message();
  };
  ParameterManager::Options options;
  options.warmup_samples = -1;
  expect_bad(options, "warmup");
  options = {};
  options.cycles_per_sample = 0;
  expect_bad(options, "per sample");
  options = {};
  options.max_samples = 0;
  expect_bad(options, "max samples");
  options = {};
  options.initial.cycle_time = microseconds(0);
  expect_bad(options, "cycle time");
  options = {};
  options.initial.fusion_threshold = -1;
  expect_bad(options, "fusion threshold");
  options = {};
  options.log_path = "/nonexistent-dir/autotune.csv";
  expect_bad(options, "/nonexistent-dir/autotune.csv");
}

}  // namespace
}  // namespace hvd::runtime
