// Reporter: a worker's thread that tells the driver how it is doing. Every
// interval (HVD_REPORT_INTERVAL_SECONDS, default 1 s) it sends WorkerStats'
// report as a signed POST /v1/elastic/report to the rendezvous server
// (docs/protocol.md, "Worker reports"), and once more at once when a
// generation's recovery marks are complete.
//
// A report is one attempt with a short timeout (ReporterOptions::timeout,
// for connecting and for the answer), never retried: a failed or refused
// one is logged at debug level and dropped, and the next interval sends
// a fresh one. Nothing waits for it: training never blocks on the driver.
//
// Owned by the Python binding, from the first hvd.init() under hvdrun to
// the process's exit (it outlives elastic resets). Thread safety: every
// method may be called from any thread. Lock order: WorkerStats::mu_ (its
// recovery listener calls Wake) before the reporter's own lock; the
// reporter's thread never holds its lock while it reads WorkerStats or
// sends.
//
// Fork: in a process forked from the owner, Wake and Stop do nothing and
// destroying it frees nothing: its thread does not exist there, and
// closing its connection would cut the parent's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "hvd/runtime/config.h"
#include "hvd/runtime/owner_process.h"
#include "hvd/runtime/worker_stats.h"

namespace hvd::runtime {

struct ReporterOptions {
  // The rendezvous server, and this worker's own key (HVD_WORKER_KEY) that
  // signs each report.
  std::string host;
  int port = 0;
  std::string key;
  // This worker: "<host>:<local rank>", as check-in names it, and hvdrun's
  // id of this process (HVD_WORKER_ID).
  std::string slot;
  int64_t worker_id = 0;
  std::chrono::milliseconds interval{1000};
  // Bound on connecting and on the answer of one report.
  std::chrono::milliseconds timeout{1000};
  // With the etcd backend: where the leading hvdrun's server is now, asked
  // after a report the server did not answer (a new leader's is
  // elsewhere); empty: the server stays where it was.
  std::function<std::optional<std::pair<std::string, int>>()> find_driver;

  // The options of a worker hvdrun started, from its configuration; nullopt
  // when it runs alone (no rendezvous server) or reports are off
  // (HVD_REPORT_INTERVAL_SECONDS=0).
  static std::optional<ReporterOptions> For(const RuntimeConfig& config);
};

class Reporter {
 public:
  // Starts the thread; the first report goes out after one interval.
  static std::unique_ptr<Reporter> Start(ReporterOptions options,
                                         std::shared_ptr<WorkerStats> stats);
  ~Reporter();  // Stop()
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Sends a report now instead of at the end of the interval.
  void Wake();
  // Sends a last report if the previous one got an answer (so a driver
  // that is gone does not hold the exit for the timeout), then joins the
  // thread. Idempotent.
  void Stop();

  // Reports the server accepted (200), and answered or failed, so far.
  int64_t accepted() const;
  int64_t attempted() const;

  class Impl;

 private:
  explicit Reporter(std::unique_ptr<Impl> impl);
  const OwnerProcess owner_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::runtime
