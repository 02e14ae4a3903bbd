// Fuzzes what the rendezvous server makes of the parts of a request: scope
// and key names (protocol.cc), the KV store they reach, a check-in's slot,
// notification address and integer parameters (elastic_board.cc,
// routes_elastic.cc), the check-in answer's JSON (worker_assignment.cc), a
// worker report's JSON and the board that stores it (worker_report.cc,
// report_board.cc) and the error answer built from them (server.cc).
// Input: SCOPE '\n' KEY '\n' VALUE (the rest).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "http_reply.h"
#include "hvd/common/env.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/report_board.h"
#include "hvd/rendezvous/worker_assignment.h"
#include "hvd/rendezvous/worker_report.h"

namespace {

namespace protocol = hvd::rendezvous::protocol;
using hvd::common::Code;
using hvd::common::Status;

// Names travel unescaped in request targets and comma-separated key lists.
bool NeedsNoEscaping(const std::string& name) {
  return name.find_first_of(",?#%& =+\"<>\\") == std::string::npos;
}

void CheckNames(const std::string& scope, const std::string& key) {
  const bool scope_ok = protocol::IsValidScope(scope);
  const bool key_ok = protocol::IsValidKey(key);
  if (scope_ok) {
    HVD_FUZZ_CHECK(!scope.empty() && scope.size() <= 128);
    HVD_FUZZ_CHECK(scope.find('/') == std::string::npos);
    HVD_FUZZ_CHECK(NeedsNoEscaping(scope));
  }
  if (key_ok) {
    HVD_FUZZ_CHECK(!key.empty());
    HVD_FUZZ_CHECK(NeedsNoEscaping(key));
  }
  if (!scope_ok || !key_ok) return;
  // The server splits the path after /v1/kv/ at its first '/'.
  const std::string target = protocol::KvTarget(scope, key);
  const std::string prefix = protocol::kKvPath;
  HVD_FUZZ_CHECK(target.compare(0, prefix.size(), prefix) == 0);
  const std::string rest = target.substr(prefix.size());
  const size_t slash = rest.find('/');
  HVD_FUZZ_CHECK(slash != std::string::npos);
  HVD_FUZZ_CHECK(rest.substr(0, slash) == scope);
  HVD_FUZZ_CHECK(rest.substr(slash + 1) == key);
}

void CheckStore(const std::string& scope, const std::string& key,
                const std::string& value) {
  hvd::rendezvous::KvLimits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 256;
  hvd::rendezvous::KvStore store(limits);
  Status set = store.Set(scope, key, value);
  if (!set.ok()) {
    HVD_FUZZ_CHECK(set.code() == Code::kResourceExhausted ||
                   set.code() == Code::kInvalidArgument);
    HVD_FUZZ_CHECK(store.Stats().keys == 0);
    return;
  }
  auto got = store.Get(scope, key);
  HVD_FUZZ_CHECK(got.ok() && *got == value);
  HVD_FUZZ_CHECK(store.Delete(scope, key).ok());
  HVD_FUZZ_CHECK(store.Get(scope, key).status().code() == Code::kNotFound);
}

// A check-in with this slot and notification address, against a published
// generation of one slot: the slot is either that one or not in the job.
void CheckCheckIn(const std::string& slot, const std::string& notify) {
  hvd::rendezvous::ElasticBoard board;
  hvd::rendezvous::GenerationPlan plan;
  plan.generation = 1;
  const std::string member = hvd::rendezvous::SlotName("host-a", 0);
  plan.slots[member].layout.size = 1;
  HVD_FUZZ_CHECK(board.Publish(plan).ok());
  auto answer = board.CheckIn(slot, 0, notify, std::chrono::milliseconds(0));
  if (slot == member) {
    HVD_FUZZ_CHECK(answer.ok() && answer->layout.size == 1);
    HVD_FUZZ_CHECK(notify.empty() ||
                   board.NotifyAddresses().at(slot) == notify);
  } else {
    HVD_FUZZ_CHECK(answer.status().code() == Code::kNotFound);
    HVD_FUZZ_CHECK(board.NotifyAddresses().empty());
  }
}

// Query parameters such as after= and wait_ms=.
void CheckInteger(const std::string& text) {
  auto value = hvd::common::ParseInt(text, "after", 0, INT64_MAX);
  if (!value.ok()) {
    HVD_FUZZ_CHECK(value.status().code() == Code::kInvalidArgument);
    return;
  }
  HVD_FUZZ_CHECK(*value >= 0);
  auto again = hvd::common::ParseInt(std::to_string(*value), "after");
  HVD_FUZZ_CHECK(again.ok() && *again == *value);
}

void CheckAssignment(const std::string& json) {
  auto assignment = hvd::rendezvous::DecodeAssignment(json);
  if (!assignment.ok()) return;
  auto again = hvd::rendezvous::DecodeAssignment(
      hvd::rendezvous::EncodeAssignment(*assignment));
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->generation == assignment->generation);
  HVD_FUZZ_CHECK(again->layout.rank == assignment->layout.rank);
  HVD_FUZZ_CHECK(again->layout.size == assignment->layout.size);
  HVD_FUZZ_CHECK(again->layout.local_rank == assignment->layout.local_rank);
  HVD_FUZZ_CHECK(again->layout.local_size == assignment->layout.local_size);
  HVD_FUZZ_CHECK(again->layout.cross_rank == assignment->layout.cross_rank);
  HVD_FUZZ_CHECK(again->layout.cross_size == assignment->layout.cross_size);
  HVD_FUZZ_CHECK(again->sync == assignment->sync);
  HVD_FUZZ_CHECK(again->reason == assignment->reason);
  HVD_FUZZ_CHECK(assignment->reason.size() <= hvd::rendezvous::kMaxReasonBytes);
  HVD_FUZZ_CHECK(again->hosts == assignment->hosts);
}

// A report body: refused, or within the limits, and then it round-trips and
// its admitted slot's board stores exactly it.
void CheckReport(const std::string& json) {
  namespace rdv = hvd::rendezvous;
  auto report = rdv::DecodeReport(json);
  rdv::ReportBoard board;
  if (!report.ok()) {
    HVD_FUZZ_CHECK(report.status().code() == Code::kInvalidArgument ||
                   report.status().code() == Code::kResourceExhausted);
    board.Admit({{"h:0", 0}});
    HVD_FUZZ_CHECK(!board.SubmitJson(json).ok());
    HVD_FUZZ_CHECK(board.Latest().empty());
    return;
  }
  HVD_FUZZ_CHECK(json.size() <= rdv::kMaxReportBytes);
  HVD_FUZZ_CHECK(!report->slot.empty() &&
                 report->slot.size() <= rdv::kMaxReportSlotBytes);
  HVD_FUZZ_CHECK(report->ops.size() <= rdv::kMaxReportOps);
  for (const auto& [name, counter] : report->ops) {
    HVD_FUZZ_CHECK(!name.empty() && name.size() <= rdv::kMaxReportOpNameBytes);
    HVD_FUZZ_CHECK(counter.count >= 0 && counter.bytes >= 0);
  }
  HVD_FUZZ_CHECK(report->steps >= 0 && report->commits >= 0 &&
                 report->stalls >= 0 && report->worker >= 0);
  auto again = rdv::DecodeReport(rdv::EncodeReport(*report));
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->slot == report->slot);
  HVD_FUZZ_CHECK(again->worker == report->worker);
  HVD_FUZZ_CHECK(again->generation == report->generation);
  HVD_FUZZ_CHECK(again->steps == report->steps);
  HVD_FUZZ_CHECK(again->ops == report->ops);
  HVD_FUZZ_CHECK(again->recovery.has_value() == report->recovery.has_value());
  const int64_t other = report->worker == 0 ? 1 : report->worker - 1;
  board.Admit({{report->slot, other}});
  HVD_FUZZ_CHECK(board.SubmitJson(json).code() == Code::kNotFound);
  board.Admit({{report->slot, report->worker}});
  HVD_FUZZ_CHECK(board.SubmitJson(json).ok());
  auto latest = board.Latest();
  HVD_FUZZ_CHECK(latest.size() == 1 && latest.begin()->first == report->slot);
  HVD_FUZZ_CHECK(latest.begin()->second.received_count == 1);
}

// A refusal that quotes the client's bytes is still a 400 with a JSON body.
void CheckErrorAnswer(const std::string& key) {
  hvd::common::HttpAnswer res = hvd::common::HttpAnswer::Error(
      Status::InvalidArgument("malformed key '" + key + "'"));
  HVD_FUZZ_CHECK(res.status == 400);
  auto body = nlohmann::json::parse(res.body, nullptr, false);
  HVD_FUZZ_CHECK(body.is_object() && body.contains(protocol::kMessage));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fields = hvd::fuzz::SplitFields(data, size, 3);
  const std::string& scope = fields[0];
  const std::string& key = fields[1];
  const std::string& value = fields[2];
  CheckNames(scope, key);
  CheckStore(scope, key, value);
  CheckCheckIn(key, value);
  CheckInteger(key);
  CheckAssignment(value);
  CheckReport(value);
  CheckErrorAnswer(key);
  return 0;
}
