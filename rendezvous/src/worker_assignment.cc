#include "hvd/rendezvous/worker_assignment.h"

#include <nlohmann/json.hpp>

namespace hvd::rendezvous {

using common::Result;
using common::Status;

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
  try {
    a.generation = json.at("generation").get<int64_t>();
    a.rank = json.at("rank").get<int>();
    a.size = json.at("size").get<int>();
    a.local_rank = json.at("local_rank").get<int>();
    a.local_size = json.at("local_size").get<int>();
    a.cross_rank = json.at("cross_rank").get<int>();
    a.cross_size = json.at("cross_size").get<int>();
    a.sync = json.at("sync").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Internal(std::string("malformed check-in answer: ") +
                            e.what());
  }
  return a;
}

}  // namespace hvd::rendezvous
