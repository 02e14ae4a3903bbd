// Runs a short-lived helper process (a host discovery script, the ssh of a
// host check) to its end with a deadline, collecting its output. Safe to
// call from any thread: posix_spawn, no fork of the threaded driver, and the
// child is reaped by its pid only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::launcher {

struct BoundedRunOptions {
  std::chrono::milliseconds timeout{10000};
  // Readable (an eventfd written once) when the caller is shutting down:
  // the run is killed at once. -1: none.
  int cancel_fd = -1;
  // Look argv[0] up in PATH (posix_spawnp) rather than run it as a path.
  bool search_path = false;
  // More stdout than this counts as a runaway and is killed like a timeout.
  size_t max_stdout = 1 << 20;
};

struct BoundedRunResult {
  int wait_status = 0;     // as waitpid reports it
  bool timed_out = false;  // killed at the deadline (or a runaway)
  bool cancelled = false;  // killed because cancel_fd became readable
  std::string stdout_text, stderr_text;
};

// Starts argv in a process group of its own with standard input from
// /dev/null, no signal blocked and SIGPIPE at its default (hvdrun blocks
// and ignores some; a child must not inherit that), and waits for its exit
// and the end of its output. At the deadline or on cancel its whole group
// is killed. The deadline also holds for a child that closed its output and
// keeps running (its exit is watched through a pidfd). An error only when
// it could not be started or watched.
common::Result<BoundedRunResult> RunBounded(
    const std::vector<std::string>& argv, const BoundedRunOptions& options);

}  // namespace hvd::launcher
