#include "hvd/notify/messages.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace hvd::notify {

using common::Result;
using common::Status;

namespace {

// The field `name` when it is a JSON integer that fits int64_t. nlohmann's
// get<int64_t>() also takes a float and converts it with a cast that is
// undefined behaviour out of range (1e19), and wraps integers past
// INT64_MAX.
std::optional<int64_t> Int64Field(const nlohmann::json& json,
                                  const char* name) {
  auto it = json.find(name);
  if (it == json.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX) {
    return std::nullopt;
  }
  return it->get<int64_t>();
}

}  // namespace

std::string Encode(const HostsUpdated& m) {
  return nlohmann::json{{"generation", m.generation},
                        {"sequence", m.sequence},
                        {"added", m.added},
                        {"removed", m.removed}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<HostsUpdated> DecodeHostsUpdated(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  auto generation = Int64Field(json, "generation");
  auto sequence = Int64Field(json, "sequence");
  if (!generation || !sequence) {
    return Status::InvalidArgument(
        "malformed HostsUpdated message: generation and sequence must be "
        "64-bit integers");
  }
  HostsUpdated m;
  m.generation = *generation;
  m.sequence = *sequence;
  try {
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
  // A reason may quote a worker's or a host's bytes: replaced if not UTF-8.
  return nlohmann::json{{"generation", m.generation}, {"reason", m.reason}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Abort> DecodeAbort(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  auto generation = Int64Field(json, "generation");
  if (!generation) {
    return Status::InvalidArgument(
        "malformed Abort message: generation must be a 64-bit integer");
  }
  Abort m;
  m.generation = *generation;
  try {
    m.reason = json.at("reason").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("malformed Abort message: ") +
                                   e.what());
  }
  return m;
}

}  // namespace hvd::notify
