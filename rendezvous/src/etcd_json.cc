#include "etcd_json.h"

#include <nlohmann/json.hpp>

#include "hvd/common/base64.h"

namespace hvd::rendezvous::etcd_json {

using common::Result;
using common::Status;
using nlohmann::json;

namespace {

// gRPC's codes that etcd's gateway answers with.
constexpr int kGrpcInvalidArgument = 3;
constexpr int kGrpcNotFound = 5;
constexpr int kGrpcPermissionDenied = 7;
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcUnavailable = 14;
constexpr int kGrpcUnauthenticated = 16;

std::string B64(std::string_view bytes) { return common::Base64Encode(bytes); }

Result<json> Parse(std::string_view body, const char* what) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status::Internal(std::string("etcd's answer to ") + what +
                            " is not a JSON object");
  }
  return parsed;
}

// protobuf's JSON writes 64-bit numbers as strings and leaves out zeros.
Result<int64_t> Int(const json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return int64_t{0};
  try {
    if (it->is_string()) return std::stoll(it->get<std::string>());
    if (it->is_number_integer()) return it->get<int64_t>();
  } catch (const std::exception&) {
  }
  return Status::Internal(std::string("etcd's answer has a bad ") + field);
}

Result<std::string> Bytes(const json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return std::string();
  if (!it->is_string()) {
    return Status::Internal(std::string("etcd's answer has a bad ") + field);
  }
  auto decoded = common::Base64Decode(it->get<std::string>());
  if (!decoded.ok()) {
    return Status::Internal(std::string("etcd's answer has a bad ") + field +
                            ": " + decoded.status().message());
  }
  return *decoded;
}

Result<int64_t> HeaderRevision(const json& object) {
  auto header = object.find("header");
  if (header == object.end() || !header->is_object()) {
    return Status::Internal("etcd's answer has no header");
  }
  return Int(*header, "revision");
}

Result<EtcdKeyValue> Kv(const json& kv) {
  if (!kv.is_object()) return Status::Internal("etcd's kv is no object");
  EtcdKeyValue item;
  auto key = Bytes(kv, "key");
  auto value = Bytes(kv, "value");
  auto created = Int(kv, "create_revision");
  auto modified = Int(kv, "mod_revision");
  auto version = Int(kv, "version");
  auto lease = Int(kv, "lease");
  for (const Status& s :
       {key.status(), value.status(), created.status(), modified.status(),
        version.status(), lease.status()}) {
    if (!s.ok()) return s;
  }
  item.key = std::move(*key);
  item.value = std::move(*value);
  item.create_revision = *created;
  item.mod_revision = *modified;
  item.version = *version;
  item.lease = *lease;
  return item;
}

Result<std::vector<EtcdKeyValue>> Kvs(const json& object) {
  std::vector<EtcdKeyValue> out;
  auto kvs = object.find("kvs");
  if (kvs == object.end()) return out;
  if (!kvs->is_array()) return Status::Internal("etcd's kvs is not a list");
  for (const json& kv : *kvs) {
    auto item = Kv(kv);
    if (!item.ok()) return item.status();
    out.push_back(std::move(*item));
  }
  return out;
}

json RangeFields(const std::string& key, bool prefix) {
  json body = {{"key", B64(key)}};
  if (prefix) body["range_end"] = B64(PrefixEnd(key));
  return body;
}

json PutFields(const std::string& key, const std::string& value,
               int64_t lease) {
  json body = {{"key", B64(key)}, {"value", B64(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  return body;
}

json Op(const EtcdOp& op) {
  switch (op.kind) {
    case EtcdOp::Kind::kPut:
      return {{"request_put", PutFields(op.key, op.value, op.lease)}};
    case EtcdOp::Kind::kDelete:
      return {{"request_delete_range", RangeFields(op.key, op.prefix)}};
    case EtcdOp::Kind::kRange:
      break;
  }
  return {{"request_range", RangeFields(op.key, op.prefix)}};
}

json Compare(const EtcdCompare& c) {
  static constexpr const char* kResults[] = {"EQUAL", "NOT_EQUAL", "GREATER",
                                             "LESS"};
  json out = {{"key", B64(c.key)},
              {"result", kResults[static_cast<int>(c.result)]}};
  switch (c.target) {
    case EtcdCompare::Target::kCreateRevision:
      out["target"] = "CREATE";
      out["create_revision"] = std::to_string(c.number);
      break;
    case EtcdCompare::Target::kModRevision:
      out["target"] = "MOD";
      out["mod_revision"] = std::to_string(c.number);
      break;
    case EtcdCompare::Target::kVersion:
      out["target"] = "VERSION";
      out["version"] = std::to_string(c.number);
      break;
    case EtcdCompare::Target::kValue:
      out["target"] = "VALUE";
      out["value"] = B64(c.value);
      break;
  }
  return out;
}

}  // namespace

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string PutBody(const std::string& key, const std::string& value,
                    int64_t lease) {
  return PutFields(key, value, lease).dump();
}

std::string RangeBody(const std::string& key, bool prefix) {
  return RangeFields(key, prefix).dump();
}

std::string DeleteBody(const std::string& key, bool prefix) {
  return RangeFields(key, prefix).dump();
}

std::string TxnBody(const std::vector<EtcdCompare>& compare,
                    const std::vector<EtcdOp>& success,
                    const std::vector<EtcdOp>& failure) {
  json body = {{"compare", json::array()},
               {"success", json::array()},
               {"failure", json::array()}};
  for (const EtcdCompare& c : compare) body["compare"].push_back(Compare(c));
  for (const EtcdOp& op : success) body["success"].push_back(Op(op));
  for (const EtcdOp& op : failure) body["failure"].push_back(Op(op));
  return body.dump();
}

std::string LeaseGrantBody(int64_t ttl) {
  return json{{"TTL", std::to_string(ttl)}}.dump();
}

std::string LeaseIdBody(int64_t lease) {
  return json{{"ID", std::to_string(lease)}}.dump();
}

std::string AuthBody(const std::string& user, const std::string& password) {
  // From the environment: bytes that are not UTF-8 are replaced (etcd
  // then refuses the password) rather than thrown.
  return json{{"name", user}, {"password", password}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string WatchBody(const std::string& key, bool prefix,
                      int64_t start_revision) {
  json create = RangeFields(key, prefix);
  create["start_revision"] = std::to_string(start_revision);
  return json{{"create_request", std::move(create)}}.dump();
}

std::optional<GatewayError> ErrorOf(std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("error")) return std::nullopt;
  GatewayError error;
  auto code = Int(parsed, "code");
  error.code = code.ok() ? static_cast<int>(*code) : 0;
  const json& text =
      parsed.contains("message") ? parsed["message"] : parsed["error"];
  error.message = text.is_string() ? text.get<std::string>() : text.dump();
  return error;
}

Status StatusOf(const GatewayError& error) {
  const std::string message = "etcd: " + error.message;
  // etcd refuses a missing user and a wrong password as invalid arguments;
  // to a caller they are what a bad token is.
  const bool credentials =
      error.message.find("user name is empty") != std::string::npos ||
      error.message.find("authentication failed") != std::string::npos;
  switch (error.code) {
    case kGrpcUnavailable:
      return Status::Transport(message);
    case kGrpcUnauthenticated:
    case kGrpcPermissionDenied:
      return Status::Unauthenticated(message);
    case kGrpcInvalidArgument:
      return credentials ? Status::Unauthenticated(message)
                         : Status::InvalidArgument(message);
    case kGrpcNotFound:
      return Status::NotFound(message);
    case kGrpcDeadlineExceeded:
      return Status::Timeout(message);
  }
  return Status::Internal(message + " (gRPC code " +
                          std::to_string(error.code) + ")");
}

bool TryAnotherMember(const GatewayError& error) {
  return error.code == kGrpcUnavailable;
}

Result<int64_t> RevisionOf(std::string_view body) {
  auto parsed = Parse(body, "a write");
  if (!parsed.ok()) return parsed.status();
  return HeaderRevision(*parsed);
}

Result<std::vector<EtcdKeyValue>> KeyValuesOf(std::string_view body) {
  auto parsed = Parse(body, "a range");
  if (!parsed.ok()) return parsed.status();
  return Kvs(*parsed);
}

Result<int64_t> DeletedOf(std::string_view body) {
  auto parsed = Parse(body, "a delete");
  if (!parsed.ok()) return parsed.status();
  return Int(*parsed, "deleted");
}

Result<EtcdTxnResult> TxnResultOf(std::string_view body) {
  auto parsed = Parse(body, "a transaction");
  if (!parsed.ok()) return parsed.status();
  EtcdTxnResult result;
  auto revision = HeaderRevision(*parsed);
  if (!revision.ok()) return revision.status();
  result.revision = *revision;
  auto succeeded = parsed->find("succeeded");
  result.succeeded = succeeded != parsed->end() && succeeded->is_boolean() &&
                     succeeded->get<bool>();
  auto responses = parsed->find("responses");
  if (responses == parsed->end()) return result;
  if (!responses->is_array()) {
    return Status::Internal("etcd's transaction responses are not a list");
  }
  for (const json& response : *responses) {
    auto range = response.find("response_range");
    if (range == response.end()) {
      result.ranges.emplace_back();
      continue;
    }
    auto kvs = Kvs(*range);
    if (!kvs.ok()) return kvs.status();
    result.ranges.push_back(std::move(*kvs));
  }
  return result;
}

Result<int64_t> LeaseIdOf(std::string_view body) {
  auto parsed = Parse(body, "a lease grant");
  if (!parsed.ok()) return parsed.status();
  auto id = Int(*parsed, "ID");
  if (id.ok() && *id == 0) return Status::Internal("etcd granted no lease");
  return id;
}

Result<int64_t> KeepAliveTtlOf(std::string_view body) {
  auto parsed = Parse(body, "a lease keep-alive");
  if (!parsed.ok()) return parsed.status();
  // The gateway streams: one message, {"result": ...}.
  auto result = parsed->find("result");
  if (result == parsed->end() || !result->is_object()) {
    return Status::Internal("etcd's keep-alive answer has no result");
  }
  auto ttl = Int(*result, "TTL");
  if (!ttl.ok()) return ttl.status();
  if (*ttl <= 0) return Status::NotFound("etcd: the lease has expired");
  return ttl;
}

Result<std::string> TokenOf(std::string_view body) {
  auto parsed = Parse(body, "an authentication");
  if (!parsed.ok()) return parsed.status();
  auto token = parsed->find("token");
  if (token == parsed->end() || !token->is_string() ||
      token->get<std::string>().empty()) {
    return Status::Internal("etcd's authentication answer has no token");
  }
  return token->get<std::string>();
}

Result<WatchMessage> WatchMessageOf(std::string_view line) {
  if (auto error = ErrorOf(line)) return StatusOf(*error);
  auto parsed = Parse(line, "a watch");
  if (!parsed.ok()) return parsed.status();
  auto result = parsed->find("result");
  if (result == parsed->end() || !result->is_object()) {
    return Status::Internal("etcd's watch message has no result");
  }
  WatchMessage message;
  auto compacted = Int(*result, "compact_revision");
  if (!compacted.ok()) return compacted.status();
  message.compact_revision = *compacted;
  auto canceled = result->find("canceled");
  message.canceled = canceled != result->end() && canceled->is_boolean() &&
                     canceled->get<bool>();
  auto reason = result->find("cancel_reason");
  if (reason != result->end() && reason->is_string()) {
    message.cancel_reason = reason->get<std::string>();
  }
  auto events = result->find("events");
  if (events == result->end()) return message;
  if (!events->is_array()) {
    return Status::Internal("etcd's watch events are not a list");
  }
  for (const json& event : *events) {
    if (!event.is_object()) {
      return Status::Internal("etcd's watch event is no object");
    }
    // protobuf's JSON leaves out the default type, PUT.
    auto type = event.find("type");
    if (type != event.end() && *type != "PUT") continue;
    auto kv = event.find("kv");
    if (kv == event.end()) {
      return Status::Internal("etcd's watch event has no kv");
    }
    auto item = Kv(*kv);
    if (!item.ok()) return item.status();
    message.puts.push_back(std::move(*item));
  }
  return message;
}

}  // namespace hvd::rendezvous::etcd_json
