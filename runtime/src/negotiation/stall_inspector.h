// The stall inspector, run by a process set's coordinator: a tensor that
// some ranks have submitted and others have not for `warn_after` is
// probably a bug (a rank skipped a collective, or is stuck outside hvd).
// It logs a warning naming the tensors and the ranks that have not
// submitted them, again every `warn_after` while the stall lasts, and after
// `shutdown_after` (if set) says to stop every rank's collectives, which
// then fail with a timeout (HorovodInternalError: an elastic job recovers).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hvd/runtime/worker_stats.h"
#include "negotiation/coordinator.h"

namespace hvd::runtime {

struct StallOptions {
  std::chrono::steady_clock::duration warn_after = std::chrono::seconds(60);
  // Zero: never stop.
  std::chrono::steady_clock::duration shutdown_after{0};
  // Counts every warning for the worker's reports; may be null. Outlives
  // the inspector (the Runtime holds it).
  WorkerStats* stats = nullptr;
};

class StallInspector {
 public:
  explicit StallInspector(StallOptions options) : options_(options) {}

  // Looks at the coordinator's waiting tensors; returns the reason to stop
  // every rank once a tensor has waited `shutdown_after`.
  std::optional<std::string> Check(const std::vector<PendingTensor>& pending,
                                   SteadyTime now);

  // The last warning logged, and how many there were (for tests).
  const std::string& last_warning() const { return last_warning_; }
  int warning_count() const { return warning_count_; }

 private:
  StallOptions options_;
  // When each stalled tensor was last warned about.
  std::unordered_map<std::string, SteadyTime> warned_;
  std::string last_warning_;
  int warning_count_ = 0;
};

}  // namespace hvd::runtime
