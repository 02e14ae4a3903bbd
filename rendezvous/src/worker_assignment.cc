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

std::string EncodeAssignment(const WorkerAssignment& a) {
  return nlohmann::json{{"generation", a.generation},
                        {"rank", a.rank},
                        {"size", a.size},
                        {"local_rank", a.local_rank},
                        {"local_size", a.local_size},
                        {"cross_rank", a.cross_rank},
                        {"cross_size", a.cross_size},
                        {"sync", a.sync}}
      .dump();
}

Result<WorkerAssignment> DecodeAssignment(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  WorkerAssignment a;
  auto generation = IntegerField<int64_t>(json, "generation");
  if (!generation) return MalformedAnswer("generation");
  a.generation = *generation;
  const std::pair<const char*, int*> ints[] = {{"rank", &a.rank},
                                               {"size", &a.size},
                                               {"local_rank", &a.local_rank},
                                               {"local_size", &a.local_size},
                                               {"cross_rank", &a.cross_rank},
                                               {"cross_size", &a.cross_size}};
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
  return a;
}

}  // namespace hvd::rendezvous
