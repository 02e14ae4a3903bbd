#include "hvd/rendezvous/worker_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "hvd/common/http_message.h"
#include "json_fields.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;
using internal::IntegerField;

namespace {

Status Malformed(const std::string& field, const char* expected) {
  return Status::InvalidArgument("malformed worker report: '" + field +
                                 "' missing or not " + expected);
}

bool IsOpName(const std::string& name) {
  if (name.empty() || name.size() > kMaxReportOpNameBytes) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

// A count: an integer from 0 to INT64_MAX.
Result<int64_t> Count(const nlohmann::json& json, const char* name,
                      const std::string& path) {
  auto value = IntegerField<int64_t>(json, name);
  if (!value || *value < 0) {
    return Malformed(path + name, "an integer >= 0");
  }
  return *value;
}

// Milliseconds: a finite number >= 0 (an integer is fine too).
Result<double> Millis(const nlohmann::json& json, const char* name) {
  const std::string path = std::string("recovery.") + name;
  auto it = json.find(name);
  if (it == json.end() || !it->is_number()) {
    return Malformed(path, "a number >= 0");
  }
  double value = it->get<double>();
  if (!std::isfinite(value) || value < 0) {
    return Malformed(path, "a number >= 0");
  }
  return value;
}

}  // namespace

std::string EncodeReport(const WorkerReport& r) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, counter] : r.ops) {
    ops[name] = {{"count", counter.count}, {"bytes", counter.bytes}};
  }
  nlohmann::json json{{"slot", r.slot},     {"worker", r.worker},
                      {"pid", r.pid},       {"generation", r.generation},
                      {"rank", r.rank},     {"size", r.size},
                      {"steps", r.steps},   {"commits", r.commits},
                      {"stalls", r.stalls}, {"ops", std::move(ops)}};
  if (r.recovery) {
    json["recovery"] = {{"generation", r.recovery->generation},
                        {"connect_ms", r.recovery->connect_ms},
                        {"sync_ms", r.recovery->sync_ms},
                        {"first_step_ms", r.recovery->first_step_ms}};
  }
  // A slot name that is not UTF-8 is the worker's bug; replace rather than
  // throw.
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<WorkerReport> DecodeReport(std::string_view text) {
  if (text.size() > kMaxReportBytes) {
    return Status::ResourceExhausted(
        "worker report of " + std::to_string(text.size()) +
        " bytes is over the limit of " + std::to_string(kMaxReportBytes));
  }
  auto json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded()) {
    return Status::InvalidArgument("malformed worker report: not JSON");
  }
  if (!json.is_object()) {
    return Status::InvalidArgument(
        "malformed worker report: not a JSON object");
  }
  WorkerReport report;
  auto slot = json.find("slot");
  if (slot == json.end() || !slot->is_string() ||
      slot->get_ref<const std::string&>().empty() ||
      slot->get_ref<const std::string&>().size() > kMaxReportSlotBytes) {
    return Malformed("slot", "a string of 1-512 bytes");
  }
  report.slot = slot->get<std::string>();
  const std::pair<const char*, int64_t*> counts[] = {
      {"worker", &report.worker},
      {"pid", &report.pid},
      {"generation", &report.generation},
      {"rank", &report.rank},
      {"size", &report.size},
      {"steps", &report.steps},
      {"commits", &report.commits},
      {"stalls", &report.stalls}};
  for (const auto& [name, field] : counts) {
    auto value = Count(json, name, "");
    if (!value.ok()) return value.status();
    *field = *value;
  }
  auto ops = json.find("ops");
  if (ops == json.end() || !ops->is_object()) {
    return Malformed("ops", "an object");
  }
  if (ops->size() > kMaxReportOps) {
    return Status::InvalidArgument(
        "malformed worker report: 'ops' has " + std::to_string(ops->size()) +
        " op types, more than " + std::to_string(kMaxReportOps));
  }
  for (const auto& [name, counter] : ops->items()) {
    if (!IsOpName(name)) {
      return Status::InvalidArgument(
          "malformed worker report: op name '" + common::Printable(name, 40) +
          "' in 'ops' is not 1-32 characters of a-z, 0-9 and _");
    }
    const std::string path = "ops." + name + ".";
    if (!counter.is_object()) return Malformed("ops." + name, "an object");
    auto count = Count(counter, "count", path);
    if (!count.ok()) return count.status();
    auto bytes = Count(counter, "bytes", path);
    if (!bytes.ok()) return bytes.status();
    report.ops[name] = OpCounter{*count, *bytes};
  }
  auto recovery = json.find("recovery");
  if (recovery != json.end() && !recovery->is_null()) {
    if (!recovery->is_object()) return Malformed("recovery", "an object");
    RecoveryMarks marks;
    auto generation = Count(*recovery, "generation", "recovery.");
    if (!generation.ok()) return generation.status();
    marks.generation = *generation;
    const std::pair<const char*, double*> phases[] = {
        {"connect_ms", &marks.connect_ms},
        {"sync_ms", &marks.sync_ms},
        {"first_step_ms", &marks.first_step_ms}};
    for (const auto& [name, field] : phases) {
      auto value = Millis(*recovery, name);
      if (!value.ok()) return value.status();
      *field = *value;
    }
    report.recovery = marks;
  }
  return report;
}

}  // namespace hvd::rendezvous
