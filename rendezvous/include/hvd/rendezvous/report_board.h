// ReportBoard: the driver's record of what its workers last reported about
// their progress (POST /v1/elastic/report; docs/protocol.md, "Worker
// reports"): collectives and bytes by op type, optimizer steps, commits,
// stall warnings and the phases of each recovery.
//
// The driver says which processes may report (Admit: slot -> worker id);
// a report from any other slot or process is refused without being stored,
// so a process hvdrun replaced cannot overwrite its successor's report.
// Memory is bounded by one report of bounded size per admitted slot.
//
// Owned by RendezvousServer (RendezvousServer::reports()). Thread-safe:
// Admit and Latest from the driver's threads, Submit from the server's
// handler threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "hvd/common/status.h"
#include "hvd/rendezvous/worker_report.h"

namespace hvd::rendezvous {

class ReportBoard {
 public:
  // The slots the driver runs now and the worker id of each slot's process
  // (hvdrun's HVD_WORKER_ID): replaces the whole previous list. The stored
  // report of a slot no longer listed, or listed for another worker, is
  // dropped with its count (read Latest() first to keep it); the others
  // stay, including those of workers that exited.
  void Admit(std::map<std::string, int64_t> workers);

  // Stores `report` (received at `received`) as its slot's latest.
  // kNotFound when the slot is not admitted or admitted for another worker
  // id; nothing is stored then.
  common::Status Submit(WorkerReport report,
                        std::chrono::steady_clock::time_point received =
                            std::chrono::steady_clock::now());

  // Parses and stores a report's JSON body as it came over HTTP:
  // kResourceExhausted over kMaxReportBytes, kInvalidArgument when
  // malformed (naming the field), else Submit's answer.
  common::Status SubmitJson(std::string_view body);

  // Slot -> the latest report from its admitted worker, with `received` and
  // `received_count` filled in.
  std::map<std::string, WorkerReport> Latest() const;

  // Called after every stored report, on the server thread that stored it,
  // with the board's lock held: it must be quick and must not call the
  // board (e.g. write an eventfd the driver waits on).
  void SetListener(std::function<void()> listener);

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> admitted_;     // slot -> worker id
  std::map<std::string, WorkerReport> latest_;  // slot -> report
  std::function<void()> listener_;
};

}  // namespace hvd::rendezvous
