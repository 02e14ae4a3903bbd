// What a worker tells the driver about its progress (POST
// /v1/elastic/report, docs/protocol.md "Worker reports"), and its JSON form
// on the wire. Shared by the workers (runtime/src/elastic/reporter.cc encodes)
// and the driver's rendezvous server (ReportBoard decodes).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::rendezvous {

// Collectives of one type that completed on this worker, and the payload
// bytes it submitted to them (this rank's tensors as given, not the bytes
// on the wire).
struct OpCounter {
  int64_t count = 0;
  int64_t bytes = 0;

  bool operator==(const OpCounter& other) const {
    return count == other.count && bytes == other.bytes;
  }
};

// How long the worker's recovery into `generation` took, by phase, each
// measured on the worker's steady clock: from its check-in's answer to its
// runtime running (connect), from there to the end of the state sync (sync,
// 0 without one), from there to the first collective that completed
// (first_step).
struct RecoveryMarks {
  int64_t generation = 0;
  double connect_ms = 0;
  double sync_ms = 0;
  double first_step_ms = 0;
};

struct WorkerReport {
  std::string slot;        // "<host>:<local rank>"
  int64_t worker = 0;      // hvdrun's worker id (HVD_WORKER_ID; 0: none)
  int64_t pid = 0;         // on the worker's host
  int64_t generation = 0;  // elastic generation joined; 0 in a static job
  int64_t rank = 0;        // in that generation
  int64_t size = 0;
  int64_t steps = 0;    // DistributedOptimizer.step() calls
  int64_t commits = 0;  // elastic state.commit() calls
  int64_t stalls = 0;   // stall warnings this worker's inspector issued
  std::map<std::string, OpCounter> ops;  // by op name ("allreduce", ...)
  // The newest generation whose marks are complete; none before the first.
  std::optional<RecoveryMarks> recovery;

  // Filled by the server (ReportBoard), never sent: when this report
  // arrived (the server's steady clock) and how many reports the slot has
  // sent since it was admitted for this worker.
  std::chrono::steady_clock::time_point received;
  int64_t received_count = 0;
};

// Bounds on what a report may hold, so that a stored report's size is
// bounded whatever a client sends.
inline constexpr size_t kMaxReportBytes = 16 * 1024;
inline constexpr size_t kMaxReportOps = 16;
inline constexpr size_t kMaxReportOpNameBytes = 32;
inline constexpr size_t kMaxReportSlotBytes = 512;

// The report's JSON (without the server-side fields), both ways. Decode
// refuses (kInvalidArgument, naming the field) malformed JSON, a missing
// field or one of the wrong type, negative counts, too many op types, op
// names that are not 1-32 characters of [a-z0-9_], and a body over
// kMaxReportBytes (kResourceExhausted). Unknown fields are ignored.
std::string EncodeReport(const WorkerReport& report);
common::Result<WorkerReport> DecodeReport(std::string_view json);

}  // namespace hvd::rendezvous
