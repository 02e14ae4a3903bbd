#include "hvd/rendezvous/report_board.h"

#include "hvd/common/http_message.h"

namespace hvd::rendezvous {

using common::Status;

void ReportBoard::Admit(std::map<std::string, int64_t> workers) {
  std::lock_guard<std::mutex> lock(mu_);
  admitted_ = std::move(workers);
  for (auto it = latest_.begin(); it != latest_.end();) {
    auto admitted = admitted_.find(it->first);
    const bool keep =
        admitted != admitted_.end() && admitted->second == it->second.worker;
    it = keep ? std::next(it) : latest_.erase(it);
  }
}

Status ReportBoard::Submit(WorkerReport report,
                           std::chrono::steady_clock::time_point received) {
  std::lock_guard<std::mutex> lock(mu_);
  auto admitted = admitted_.find(report.slot);
  if (admitted == admitted_.end()) {
    return Status::NotFound("slot " + common::Printable(report.slot, 100) +
                            " is not running in this job: report dropped");
  }
  if (admitted->second != report.worker) {
    return Status::NotFound("slot " + report.slot + " belongs to worker " +
                            std::to_string(admitted->second) +
                            ", not to worker " + std::to_string(report.worker) +
                            " (hvdrun replaced that process): report dropped");
  }
  WorkerReport& stored = latest_[report.slot];
  const int64_t count = stored.received_count + 1;
  stored = std::move(report);
  stored.received = received;
  stored.received_count = count;
  if (listener_) listener_();
  return Status::Ok();
}

Status ReportBoard::SubmitJson(std::string_view body) {
  auto report = DecodeReport(body);
  if (!report.ok()) return report.status();
  return Submit(std::move(*report));
}

std::map<std::string, WorkerReport> ReportBoard::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void ReportBoard::SetListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

}  // namespace hvd::rendezvous
