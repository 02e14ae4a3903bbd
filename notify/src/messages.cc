#include "hvd/notify/messages.h"

#include <nlohmann/json.hpp>

namespace hvd::notify {

using common::Result;
using common::Status;

std::string Encode(const HostsUpdated& m) {
  return nlohmann::json{{"generation", m.generation},
                        {"sequence", m.sequence},
                        {"added", m.added},
                        {"removed", m.removed}}
      .dump();
}

Result<HostsUpdated> DecodeHostsUpdated(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  HostsUpdated m;
  try {
    m.generation = json.at("generation").get<int64_t>();
    m.sequence = json.at("sequence").get<int64_t>();
    m.added = json.at("added").get<std::vector<std::string>>();
    m.removed = json.at("removed").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(
        std::string("malformed HostsUpdated message: ") + e.what());
  }
  if (m.sequence <= 0) {
    return Status::InvalidArgument("HostsUpdated sequence must be positive");
  }
  return m;
}

std::string Encode(const Abort& m) {
  return nlohmann::json{{"generation", m.generation}, {"reason", m.reason}}
      .dump();
}

Result<Abort> DecodeAbort(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  Abort m;
  try {
    m.generation = json.at("generation").get<int64_t>();
    m.reason = json.at("reason").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("malformed Abort message: ") +
                                   e.what());
  }
  return m;
}

}  // namespace hvd::notify
