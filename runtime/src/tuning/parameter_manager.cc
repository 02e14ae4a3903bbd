#include "tuning/parameter_manager.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

// The grid with `initial` added (sorted) if missing; only `initial` when the
// coordinate is not tuned.
template <typename T>
std::vector<T> GridWith(std::vector<T> grid, T initial, bool tune) {
  if (!tune) return {initial};
  if (std::find(grid.begin(), grid.end(), initial) == grid.end()) {
    grid.push_back(initial);
    std::sort(grid.begin(), grid.end());
  }
  return grid;
}

template <typename T>
int IndexOf(const std::vector<T>& grid, T value) {
  return static_cast<int>(std::find(grid.begin(), grid.end(), value) -
                          grid.begin());
}

std::vector<int64_t> FusionGrid() {
  std::vector<int64_t> grid = {0};
  for (int64_t mib = 1; mib <= 256; mib *= 2) grid.push_back(mib << 20);
  return grid;
}

std::vector<std::chrono::microseconds> CycleGrid() {
  using std::chrono::microseconds;
  return {microseconds(500), microseconds(1000), microseconds(2500),
          microseconds(5000), microseconds(10000)};
}

}  // namespace

ParameterManager::Options ParameterManager::OptionsOf(
    const RuntimeConfig& config, bool hierarchical_on) {
  Options options;
  options.initial.fusion_threshold = config.fusion_threshold;
  options.initial.cycle_time = config.cycle_time;
  options.initial.cache_enabled = config.cache_capacity > 0;
  options.tune_fusion_threshold = !config.fusion_threshold_set;
  options.tune_cycle_time = !config.cycle_time_set;
  options.tune_cache = config.cache_capacity > 0;
  options.initial.hierarchical_allreduce = hierarchical_on;
  options.tune_hierarchical_allreduce =
      hierarchical_on && !config.hierarchical_allreduce_set;
  options.warmup_samples = config.autotune_warmup_samples;
  options.cycles_per_sample = config.autotune_cycles_per_sample;
  options.max_samples = config.autotune_max_samples;
  options.log_path = config.autotune_log;
  return options;
}

Result<std::unique_ptr<ParameterManager>> ParameterManager::Create(
    Options options) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("autotune: " + what);
  };
  if (options.warmup_samples < 0) {
    return bad("warmup samples must be >= 0, got " +
               std::to_string(options.warmup_samples));
  }
  if (options.cycles_per_sample < 1) {
    return bad("cycles (steps) per sample must be >= 1, got " +
               std::to_string(options.cycles_per_sample));
  }
  if (options.max_samples < 1) {
    return bad("max samples must be >= 1, got " +
               std::to_string(options.max_samples));
  }
  if (options.initial.fusion_threshold < 0) {
    return bad("fusion threshold must be >= 0 bytes, got " +
               std::to_string(options.initial.fusion_threshold));
  }
  if (options.initial.cycle_time.count() <= 0) {
    return bad("cycle time must be > 0, got " +
               std::to_string(options.initial.cycle_time.count()) + " us");
  }
  std::unique_ptr<std::FILE, FileCloser> log;
  if (!options.log_path.empty()) {
    log.reset(std::fopen(options.log_path.c_str(), "a"));
    if (!log) {
      return bad("cannot open the log '" + options.log_path +
                 "': " + std::strerror(errno));
    }
    if (std::fseek(log.get(), 0, SEEK_END) == 0 && std::ftell(log.get()) == 0) {
      std::fputs(
          "trial,fusion_threshold_bytes,cycle_time_ms,cache_enabled,"
          "hierarchical_allreduce,throughput_bytes_per_s,best\n",
          log.get());
      std::fflush(log.get());
    }
  }
  std::unique_ptr<ParameterManager> manager(new ParameterManager(options));
  manager->log_ = std::move(log);
  return manager;
}

ParameterManager::ParameterManager(const Options& options)
    : options_(options),
      fusion_grid_(GridWith(FusionGrid(), options.initial.fusion_threshold,
                            options.tune_fusion_threshold)),
      cycle_grid_(GridWith(CycleGrid(), options.initial.cycle_time,
                           options.tune_cycle_time)),
      cache_grid_(GridWith(std::vector<bool>{false, true},
                           options.initial.cache_enabled, options.tune_cache)),
      hierarchical_grid_(GridWith(std::vector<bool>{false, true},
                                  options.initial.hierarchical_allreduce,
                                  options.tune_hierarchical_allreduce)),
      current_(options.initial),
      discard_(options.warmup_samples) {
  trial_point_ = {
      IndexOf(fusion_grid_, options.initial.fusion_threshold),
      IndexOf(cycle_grid_, options.initial.cycle_time),
      IndexOf(cache_grid_, options.initial.cache_enabled),
      IndexOf(hierarchical_grid_, options.initial.hierarchical_allreduce)};
}

TunableParams ParameterManager::ToParams(const Point& point) const {
  TunableParams params;
  params.fusion_threshold = fusion_grid_[point[0]];
  params.cycle_time = cycle_grid_[point[1]];
  params.cache_enabled = cache_grid_[point[2]];
  params.hierarchical_allreduce = hierarchical_grid_[point[3]];
  return params;
}

bool ParameterManager::Record(int64_t bytes,
                              std::chrono::steady_clock::time_point now) {
  if (!tuning_) return false;
  if (!clock_started_) {
    clock_started_ = true;
    window_start_ = now;
    return false;
  }
  window_bytes_ += bytes;
  if (++window_cycles_ < options_.cycles_per_sample) return false;
  auto elapsed =
      std::max(now - window_start_, std::chrono::steady_clock::duration(1));
  double throughput = static_cast<double>(window_bytes_) /
                      std::chrono::duration<double>(elapsed).count();
  window_start_ = now;
  window_bytes_ = 0;
  window_cycles_ = 0;
  if (discard_ > 0) {
    --discard_;
    return false;
  }
  return ScoreTrial(throughput);
}

bool ParameterManager::ScoreTrial(double throughput) {
  scores_[trial_point_] = {throughput, trials_};
  LogTrial(trials_, current_, throughput, false);
  ++trials_;
  Judge(trial_point_);
  Point next;
  if (trials_ < options_.max_samples && NextPoint(&next)) {
    trial_point_ = next;
    current_ = ToParams(next);
    discard_ = 1;  // the other ranks switch a cycle or more later
    return true;
  }
  tuning_ = false;
  const Scored& best = scores_.at(centre_);
  TunableParams best_params = ToParams(centre_);
  LogTrial(best.trial, best_params, best.throughput, true);
  if (best_params == current_) return false;
  current_ = best_params;
  return true;
}

void ParameterManager::Judge(const Point& point) {
  double score = scores_.at(point).throughput;
  if (!have_centre_) {
    have_centre_ = true;
    centre_ = point;
    return;
  }
  if (score > scores_.at(centre_).throughput) {
    centre_ = point;
    moved_along_dir_ = true;
    moved_in_pass_ = true;
  } else {
    NextDirection();
  }
}

void ParameterManager::NextDirection() {
  // After a move, the other direction leads back to a worse point.
  if (dir_ > 0 && !moved_along_dir_) {
    dir_ = -1;
  } else {
    ++line_;
    dir_ = +1;
  }
  moved_along_dir_ = false;
}

bool ParameterManager::NextPoint(Point* point) {
  // The lines searched: the four axes, then the two diagonals of the
  // (fusion threshold, cycle time) plane, which the two share a ridge on
  // (a longer cycle collects more bytes to fuse).
  static constexpr Point kAxes[] = {
      {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  static constexpr Point kDiagonals[] = {{1, 1, 0, 0}, {1, -1, 0, 0}};
  const int sizes[kCoords] = {static_cast<int>(fusion_grid_.size()),
                              static_cast<int>(cycle_grid_.size()),
                              static_cast<int>(cache_grid_.size()),
                              static_cast<int>(hierarchical_grid_.size())};
  // Ends: every step either moves the centre to a strictly better point
  // (finitely many) or advances the direction or the line, and a round of
  // axes and diagonals without a move stops.
  while (true) {
    const Point* lines = diagonals_ ? kDiagonals : kAxes;
    int num_lines = diagonals_ ? 2 : 4;
    if (line_ == num_lines) {
      if (moved_in_pass_) {
        diagonals_ = false;
      } else if (!diagonals_) {
        diagonals_ = true;
      } else {
        return false;
      }
      line_ = 0;
      dir_ = +1;
      moved_along_dir_ = false;
      moved_in_pass_ = false;
      continue;
    }
    Point candidate = centre_;
    bool inside = true;
    for (int c = 0; c < kCoords; ++c) {
      candidate[c] += dir_ * lines[line_][c];
      inside = inside && candidate[c] >= 0 && candidate[c] < sizes[c];
    }
    if (!inside) {
      NextDirection();
    } else if (scores_.count(candidate) != 0) {
      Judge(candidate);
    } else {
      *point = candidate;
      return true;
    }
  }
}

void ParameterManager::LogTrial(int trial, const TunableParams& params,
                                double throughput, bool best) {
  if (!log_) return;
  std::fprintf(log_.get(), "%d,%lld,%g,%d,%d,%.0f,%d\n", trial,
               static_cast<long long>(params.fusion_threshold),
               static_cast<double>(params.cycle_time.count()) / 1000.0,
               params.cache_enabled ? 1 : 0,
               params.hierarchical_allreduce ? 1 : 0, throughput, best ? 1 : 0);
  std::fflush(log_.get());
}

}  // namespace hvd::runtime
