#include "hvd/rendezvous/worker_assignment.h"

#include <nlohmann/json.hpp>

#include "json_fields.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;
using internal::IntegerField;

namespace {

Status MalformedAnswer(const char* field) {
  return Status::Internal(std::string("malformed check-in answer: '") + field +
                          "' missing or of the wrong type");
}

}  // namespace

std::string SlotName(const std::string& host, int local_rank) {
  return host + ":" + std::to_string(local_rank);
}

std::string ShortReason(const std::string& reason) {
  if (reason.size() <= kMaxReasonBytes) return reason;
  constexpr char kMore[] = "...";
  size_t end = kMaxReasonBytes - (sizeof(kMore) - 1);
  // Back to the start of a character: UTF-8 continuation bytes are
  // 10xxxxxx.
  while (end > 0 && (static_cast<unsigned char>(reason[end]) & 0xC0) == 0x80) {
    --end;
  }
  return reason.substr(0, end) + kMore;
}

std::string EncodeAssignment(const WorkerAssignment& a) {
  // Host names come from the discovery script: invalid UTF-8 becomes
  // U+FFFD instead of an exception.
  nlohmann::json json{{"generation", a.generation},
                      {"rank", a.layout.rank},
                      {"size", a.layout.size},
                      {"local_rank", a.layout.local_rank},
                      {"local_size", a.layout.local_size},
                      {"cross_rank", a.layout.cross_rank},
                      {"cross_size", a.layout.cross_size},
                      {"sync", a.sync},
                      {"reason", a.reason},
                      {"hosts", a.hosts}};
  if (!a.generation_key.empty()) json["generation_key"] = a.generation_key;
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<WorkerAssignment> DecodeAssignment(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  WorkerAssignment a;
  auto generation = IntegerField<int64_t>(json, "generation");
  if (!generation) return MalformedAnswer("generation");
  a.generation = *generation;
  const std::pair<const char*, int*> ints[] = {
      {"rank", &a.layout.rank},
      {"size", &a.layout.size},
      {"local_rank", &a.layout.local_rank},
      {"local_size", &a.layout.local_size},
      {"cross_rank", &a.layout.cross_rank},
      {"cross_size", &a.layout.cross_size}};
  for (const auto& [name, field] : ints) {
    auto value = IntegerField<int>(json, name);
    if (!value) return MalformedAnswer(name);
    *field = *value;
  }
  auto sync = json.find("sync");
  if (sync == json.end() || !sync->is_boolean()) {
    return MalformedAnswer("sync");
  }
  a.sync = sync->get<bool>();
  auto reason = json.find("reason");
  if (reason != json.end()) {
    if (!reason->is_string()) return MalformedAnswer("reason");
    a.reason = ShortReason(reason->get<std::string>());
  }
  auto hosts = json.find("hosts");
  if (hosts != json.end()) {
    if (!hosts->is_array()) return MalformedAnswer("hosts");
    for (const auto& host : *hosts) {
      if (!host.is_string()) return MalformedAnswer("hosts");
      a.hosts.push_back(host.get<std::string>());
    }
  }
  auto key = json.find("generation_key");
  if (key != json.end()) {
    if (!key->is_string()) return MalformedAnswer("generation_key");
    a.generation_key = key->get<std::string>();
  }
  return a;
}

}  // namespace hvd::rendezvous
