// ParameterManager: autotune (HOROVOD_AUTOTUNE=1) of the fusion threshold,
// the background cycle time and the response cache on/off, from measured
// throughput. Pure logic: no threads, no clock of its own (the caller passes
// the time), no I/O other than the optional CSV log.
//
// Who calls it: rank 0's background thread, after every cycle that did
// collective work; it broadcasts current() to the other ranks whenever
// Record() returns true. Not thread-safe: one thread only.
//
// Measurement. A sample is `cycles_per_sample` consecutive working cycles:
// the bytes they moved divided by the wall time from the end of the previous
// sample to the end of this one. Samples tile time, so the time the script
// spends computing between cycles counts too: the score is the throughput
// the job sees, not the speed of one collective. The very first Record()
// only starts the clock. Samples that are not scored:
//   - the first `warmup_samples` of the run (framework and allocator warm-up,
//     first iterations), and
//   - the first sample after every change of parameters: the other ranks
//     apply the change a cycle or more later, a new fusion threshold
//     reallocates the fusion buffer, and a cache switched on starts empty.
// A trial is one parameter set; its score is its one scored sample. To
// average more, raise `cycles_per_sample` (one longer window is a
// time-weighted mean). Not a median of several short windows: a window
// shorter than a training step lands either on the script's compute gap or
// on the burst of gradients, and the median of such ratios favours settings
// with more cycles per step (short cycle times); one long window has no
// such bias.
//
// Search: a compass search on grids.
//   fusion threshold: 0 (no fusion), 1, 2, 4, ..., 256 MiB
//   cycle time:       0.5, 1, 2.5, 5, 10 ms
//   response cache:   off, on
// The initial value of each coordinate is added to its grid if it is not on
// it, and the initial parameters are the first trial, so the result is never
// a setting worse than the start (up to noise). A not-tuned coordinate's
// grid is its initial value alone. From the best point so far (the centre)
// it searches one line at a time: one grid step along it, going on while
// the score improves, else the same against it. The lines are the three
// axes, repeated while a round of them moved the centre; when the axes no
// longer improve, the two diagonals of the (fusion threshold, cycle time)
// plane, because the two interact: a longer cycle collects more bytes to
// fuse, so the good settings lie on a ridge where every one-coordinate step
// is worse. A diagonal that improves sends the search back to the axes;
// when neither improves, the centre is a grid-local optimum and the search
// ends. It also ends when the budget is spent. Either way it fixes the
// best-scoring trial, which is always the centre. Every scored point is
// remembered and never measured twice. On the tests' smooth responses it
// reaches the grid optimum in 16 trials (separable) and 21 (a ridge).
//
// Why not a library: Debian's optimisers (libnlopt-dev, libgsl-dev's
// multimin, libceres-dev) call the objective as a blocking callback, which
// would need a thread parked inside the optimiser between cycles. dlib's
// global_function_search (libdlib-dev) does ask/tell, but it brings ~130 MB
// of packages (mostly face-detection models) and its MaxLIPO+TR assumes an
// almost noise-free objective. Horovod's Bayesian optimisation spends much of
// its 20 samples exploring; on a response with one broad peak, a
// deterministic walk over grid neighbours gets there in about as many
// trials and is easy to reason about and to test.
//
// Budget: `max_samples` scored samples, i.e. trials
// (HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES, default 20). Tuning therefore
// takes at most 1 + cycles_per_sample * (warmup_samples + 2 * max_samples - 1)
// working cycles (every trial but the first also has its discarded sample).
//
// Log (HOROVOD_AUTOTUNE_LOG): CSV, appended to (a new file gets the header),
// each line flushed as written so a killed job keeps it. Columns: trial,
// fusion_threshold_bytes, cycle_time_ms, cache_enabled (1/0),
// hierarchical_allreduce (1/0), throughput_bytes_per_s, best (1/0). One line
// per scored trial, then the chosen trial's line again with best=1:
//   trial,fusion_threshold_bytes,cycle_time_ms,cache_enabled,...
//   0,134217728,1,1,1,235758061,0
//   ...
//   15,16777216,5,0,1,545827158,0
//   7,33554432,2.5,0,1,1000000000,1
// Write errors after opening are ignored: the log must not stop training.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"

namespace hvd::runtime {

struct TunableParams {
  int64_t fusion_threshold = kDefaultFusionThreshold;  // bytes; 0: no fusion
  std::chrono::microseconds cycle_time{1000};
  bool cache_enabled = true;
  // Allreduce through the host group's shared memory (docs/design.md,
  // "Hierarchical collectives"), tuned only where the job has one.
  bool hierarchical_allreduce = true;

  friend bool operator==(const TunableParams& a, const TunableParams& b) {
    return a.fusion_threshold == b.fusion_threshold &&
           a.cycle_time == b.cycle_time && a.cache_enabled == b.cache_enabled &&
           a.hierarchical_allreduce == b.hierarchical_allreduce;
  }
  friend bool operator!=(const TunableParams& a, const TunableParams& b) {
    return !(a == b);
  }
};

class ParameterManager {
 public:
  struct Options {
    TunableParams initial;
    // A coordinate not tuned keeps its initial value (Horovod fixes a knob
    // the user set explicitly; a cache without capacity cannot be on).
    bool tune_fusion_threshold = true;
    bool tune_cycle_time = true;
    bool tune_cache = true;
    bool tune_hierarchical_allreduce = false;
    int warmup_samples = 3;      // >= 0, HOROVOD_AUTOTUNE_WARMUP_SAMPLES
    int cycles_per_sample = 10;  // >= 1, HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE
    int max_samples = 20;        // >= 1, the budget of scored samples
    std::string log_path;        // "": no log
  };

  // The options HOROVOD_AUTOTUNE's settings give: every knob the user did
  // not set explicitly is tuned. `hierarchical_on`: every rank has the
  // shared-memory stage (agreed at init), the only place hierarchical
  // allreduce is a choice.
  static Options OptionsOf(const RuntimeConfig& config, bool hierarchical_on);

  // kInvalidArgument for an option out of range (named) or a log file that
  // cannot be opened.
  static common::Result<std::unique_ptr<ParameterManager>> Create(
      Options options);

  ParameterManager(const ParameterManager&) = delete;
  ParameterManager& operator=(const ParameterManager&) = delete;

  // Called after every cycle that did collective work: `bytes` moved in
  // this cycle, `now` from a steady clock. Returns true exactly when
  // current() changed (a new trial starts, or tuning ended and the best,
  // different from the last trial, is applied). The change is meant for the
  // next cycle on. Once tuning() is false it does nothing and returns false.
  bool Record(int64_t bytes, std::chrono::steady_clock::time_point now);

  // The parameters to use now.
  const TunableParams& current() const { return current_; }

  // False once the budget is spent or the search converged; current() is
  // then the best-scoring trial for good.
  bool tuning() const { return tuning_; }

 private:
  // Fusion threshold, cycle time, cache, hierarchical allreduce.
  static constexpr int kCoords = 4;
  using Point = std::array<int, kCoords>;  // an index into each grid

  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };

  explicit ParameterManager(const Options& options);

  TunableParams ToParams(const Point& point) const;
  // Scores the trial that just ended and starts the next one, or finishes.
  bool ScoreTrial(double throughput);
  // Moves the search past the scored `point`: the centre, if it is better,
  // else the next direction.
  void Judge(const Point& point);
  // Abandons the current direction: tries the other one or the next
  // line.
  void NextDirection();
  // The next point to measure, or false when the search has converged.
  bool NextPoint(Point* point);
  void LogTrial(int trial, const TunableParams& params, double throughput,
                bool best);

  const Options options_;
  std::vector<int64_t> fusion_grid_;
  std::vector<std::chrono::microseconds> cycle_grid_;
  std::vector<bool> cache_grid_;
  std::vector<bool> hierarchical_grid_;
  std::unique_ptr<std::FILE, FileCloser> log_;

  TunableParams current_;
  bool tuning_ = true;

  // The sample being measured.
  bool clock_started_ = false;
  std::chrono::steady_clock::time_point window_start_;
  int64_t window_bytes_ = 0;
  int window_cycles_ = 0;
  int discard_ = 0;  // samples still to discard before the next score

  // The search.
  struct Scored {
    double throughput;
    int trial;
  };
  Point trial_point_{};             // being measured
  std::map<Point, Scored> scores_;  // every scored point
  int trials_ = 0;                  // scored so far
  bool have_centre_ = false;
  Point centre_{};          // the best point so far
  bool diagonals_ = false;  // searching the diagonals, not the axes
  int line_ = 0;            // the axis or diagonal being searched
  int dir_ = +1;            // +1: along it, -1: against it
  bool moved_along_dir_ = false;
  bool moved_in_pass_ = false;
};

}  // namespace hvd::runtime
