#include "hvd/rendezvous/client.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hvd/common/base64.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous {

using common::Code;
using common::HttpResponse;
using common::Result;
using common::Status;

namespace {

Code CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
      return Code::kInvalidArgument;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 408:
      return Code::kTimeout;
    case 413:
      return Code::kResourceExhausted;
    case 503:
      return Code::kAborted;
    default:
      return Code::kInternal;
  }
}

std::string WithWait(std::string target, std::chrono::milliseconds wait,
                     char separator) {
  if (wait.count() > 0) {
    target += separator;
    target += protocol::kWaitMs;
    target += '=';
    target += std::to_string(wait.count());
  }
  return target;
}

Status CheckNames(const std::string& scope, const std::string& key) {
  if (!protocol::IsValidScope(scope)) {
    return Status::InvalidArgument("malformed rendezvous scope '" + scope +
                                   "'");
  }
  if (!protocol::IsValidKey(key)) {
    return Status::InvalidArgument("malformed rendezvous key '" + key + "'");
  }
  return Status::Ok();
}

}  // namespace

RendezvousClient::RendezvousClient(common::HttpClientOptions options)
    : http_(std::move(options)) {}

Result<HttpResponse> RendezvousClient::Call(const std::string& method,
                                            const std::string& target,
                                            const std::string& body,
                                            Millis long_poll) {
  ++requests_;
  auto response = http_.Send(method, target, body, long_poll);
  if (!response.ok()) return response.status();
  if (response->status == 200) return response;
  std::string detail = response->body;
  auto json = nlohmann::json::parse(response->body, nullptr, false);
  if (json.is_object() && json.contains(protocol::kMessage) &&
      json[protocol::kMessage].is_string()) {
    detail = json[protocol::kMessage].get<std::string>();
  }
  return Status(CodeForHttpStatus(response->status),
                method + " " + http_.Url(target) + ": " +
                    common::HttpStatusText(response->status) + ": " + detail);
}

Status RendezvousClient::Set(const std::string& scope, const std::string& key,
                             const std::string& value) {
  Status names = CheckNames(scope, key);
  if (!names.ok()) return names;
  return Call("PUT", protocol::KvTarget(scope, key), value, Millis(0)).status();
}

Result<std::string> RendezvousClient::Get(const std::string& scope,
                                          const std::string& key, Millis wait) {
  Status names = CheckNames(scope, key);
  if (!names.ok()) return names;
  auto response = Call(
      "GET", WithWait(protocol::KvTarget(scope, key), wait, '?'), "", wait);
  if (!response.ok()) return response.status();
  return std::move(response->body);
}

Result<WorkerAssignment> RendezvousClient::CheckIn(
    const std::string& slot, int64_t after, const std::string& notify_address,
    Millis wait, int64_t worker) {
  httplib::Params params{{protocol::kSlot, slot},
                         {protocol::kAfter, std::to_string(after)},
                         {protocol::kNotify, notify_address},
                         {protocol::kWaitMs, std::to_string(wait.count())},
                         {protocol::kWorker, std::to_string(worker)}};
  std::string target =
      httplib::append_query_params(protocol::kCheckInPath, params);
  auto response = Call("GET", target, "", wait);
  if (!response.ok()) return response.status();
  return DecodeAssignment(response->body);
}

Result<RendezvousClient::Values> RendezvousClient::DecodeValues(
    const std::string& target, const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains(protocol::kValues) ||
      !json[protocol::kValues].is_object()) {
    return Status::Internal("GET " + http_.Url(target) +
                            ": answer is not a {\"values\": {...}} object");
  }
  Values values;
  for (const auto& [key, encoded] : json[protocol::kValues].items()) {
    if (!encoded.is_string()) {
      return Status::Internal("GET " + http_.Url(target) + ": value of '" +
                              key + "' is not a string");
    }
    auto decoded = common::Base64Decode(encoded.get<std::string>());
    if (!decoded.ok()) return decoded.status().WithContext("value of " + key);
    values.emplace(key, std::move(*decoded));
  }
  return values;
}

Result<RendezvousClient::Values> RendezvousClient::MultiGet(
    const std::string& scope, const std::vector<std::string>& keys,
    Millis wait) {
  for (const std::string& key : keys) {
    Status names = CheckNames(scope, key);
    if (!names.ok()) return names;
  }
  auto deadline = std::chrono::steady_clock::now() + wait;
  Values all;
  size_t next = 0;
  while (next < keys.size()) {
    std::string target = protocol::KvTarget(scope, "") + "?" + protocol::kKeys +
                         "=" + keys[next++];
    while (next < keys.size() &&
           target.size() + keys[next].size() + 1 < protocol::kMaxTargetBytes) {
      target += "," + keys[next++];
    }
    // Later chunks wait only for what is left of the caller's budget.
    Millis left =
        std::max(Millis(0), std::chrono::duration_cast<Millis>(
                                deadline - std::chrono::steady_clock::now()));
    if (wait.count() > 0 && left.count() == 0) left = Millis(1);
    target = WithWait(target, wait.count() > 0 ? left : Millis(0), '&');
    auto response = Call("GET", target, "", left);
    if (!response.ok()) return response.status();
    auto values = DecodeValues(target, response->body);
    if (!values.ok()) return values.status();
    all.merge(*values);
  }
  return all;
}

Result<RendezvousClient::Values> RendezvousClient::WaitPrefix(
    const std::string& scope, const std::string& prefix, size_t count,
    Millis wait) {
  if (!prefix.empty()) {
    Status names = CheckNames(scope, prefix);
    if (!names.ok()) return names;
  }
  std::string target = protocol::KvTarget(scope, "") + "?" + protocol::kPrefix +
                       "=" + prefix + "&" + protocol::kCount + "=" +
                       std::to_string(count);
  target = WithWait(target, wait, '&');
  auto response = Call("GET", target, "", wait);
  if (!response.ok()) return response.status();
  return DecodeValues(target, response->body);
}

Status RendezvousClient::Delete(const std::string& scope,
                                const std::string& key) {
  Status names = CheckNames(scope, key);
  if (!names.ok()) return names;
  return Call("DELETE", protocol::KvTarget(scope, key), "", Millis(0)).status();
}

Result<size_t> RendezvousClient::DeleteScope(const std::string& scope) {
  if (!protocol::IsValidScope(scope)) {
    return Status::InvalidArgument("malformed rendezvous scope '" + scope +
                                   "'");
  }
  std::string target = protocol::KvTarget(scope, "");
  auto response = Call("DELETE", target, "", Millis(0));
  if (!response.ok()) return response.status();
  auto json = nlohmann::json::parse(response->body, nullptr, false);
  if (!json.is_object() || !json.contains("deleted") ||
      !json["deleted"].is_number_unsigned()) {
    return Status::Internal("DELETE " + http_.Url(target) +
                            ": answer has no 'deleted' count");
  }
  return json["deleted"].get<size_t>();
}

Result<std::string> RendezvousClient::ServerStatus() {
  auto response = Call("GET", protocol::kStatusPath, "", Millis(0));
  if (!response.ok()) return response.status();
  return std::move(response->body);
}

}  // namespace hvd::rendezvous
