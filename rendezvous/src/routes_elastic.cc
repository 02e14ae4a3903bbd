// The /v1/elastic/... routes: a worker checks its slot in for the next
// generation, and reports its progress (docs/protocol.md).
#include "http_reply.h"
#include "hvd/common/env.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/worker_assignment.h"
#include "hvd/rendezvous/worker_report.h"
#include "worker_access.h"

namespace hvd::rendezvous::internal {

using common::HttpAnswer;
using common::Status;

HttpAnswer HandleCheckIn(const common::HttpRequest& req, ElasticBoard& board,
                         std::chrono::milliseconds max_wait,
                         const WrappedGenerationKey& wrapped_key) {
  const std::string slot = req.Param(protocol::kSlot);
  if (slot.empty() || slot.size() > 512) {
    return HttpAnswer::Error(
        Status::InvalidArgument("check-in needs slot=<host>:<local rank>"));
  }
  auto after = common::ParseInt(req.Param(protocol::kAfter), protocol::kAfter,
                                0, INT64_MAX);
  if (!after.ok()) return HttpAnswer::Error(after.status());
  auto wait = common::ParseInt(req.Param(protocol::kWaitMs), protocol::kWaitMs,
                               0, max_wait.count());
  if (!wait.ok()) return HttpAnswer::Error(wait.status());
  int64_t worker = 0;
  if (!req.Param(protocol::kWorker).empty()) {
    auto parsed = common::ParseInt(req.Param(protocol::kWorker),
                                   protocol::kWorker, 0, INT64_MAX);
    if (!parsed.ok()) return HttpAnswer::Error(parsed.status());
    worker = *parsed;
  }
  if (req.worker) {
    Status may = WorkerMayActFor(*req.worker, slot, worker, "check-in");
    if (!may.ok()) return HttpAnswer::Error(may);
  }
  auto assignment = board.CheckIn(slot, *after, req.Param(protocol::kNotify),
                                  std::chrono::milliseconds(*wait), worker);
  if (!assignment.ok()) return HttpAnswer::Error(assignment.status());
  if (wrapped_key && req.worker) {
    assignment->generation_key =
        wrapped_key(*req.worker, assignment->generation);
  }
  return HttpAnswer::Json(EncodeAssignment(*assignment));
}

HttpAnswer HandleReport(const common::HttpRequest& req, ReportBoard& reports) {
  // The HTTP core's body limit is the store's (megabytes); a report is far
  // smaller, and the board never parses more than kMaxReportBytes.
  auto report = DecodeReport(req.body);
  if (!report.ok()) return HttpAnswer::Error(report.status());
  if (req.worker) {
    Status may =
        WorkerMayActFor(*req.worker, report->slot, report->worker, "report");
    if (!may.ok()) return HttpAnswer::Error(may);
  }
  Status stored = reports.Submit(std::move(*report));
  if (!stored.ok()) return HttpAnswer::Error(stored);
  return HttpAnswer{};
}

}  // namespace hvd::rendezvous::internal
