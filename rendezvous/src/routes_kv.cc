// The /v1/kv/... routes: PUT, GET (single, multi-key, by prefix; long-poll)
// and DELETE (key, scope). docs/protocol.md describes them for clients.
#include <nlohmann/json.hpp>

#include <cstring>
#include <vector>

#include "http_reply.h"
#include "hvd/common/base64.h"
#include "hvd/common/env.h"
#include "hvd/rendezvous/protocol.h"
#include "worker_access.h"

namespace hvd::rendezvous::internal {

using common::HttpAnswer;
using common::HttpRequest;
using common::Printable;
using common::Result;
using common::Status;

Result<KvPath> ParseKvPath(std::string_view rest) {
  KvPath path;
  size_t slash = rest.find('/');
  path.scope = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    path.key = std::string(rest.substr(slash + 1));
  }
  if (!protocol::IsValidScope(path.scope)) {
    return Status::InvalidArgument("malformed scope '" + Printable(path.scope) +
                                   "' (1-128 characters of A-Z a-z 0-9 . _ -)");
  }
  if (path.key && !protocol::IsValidKey(*path.key)) {
    return Status::InvalidArgument(
        "malformed key '" + Printable(*path.key) +
        "' (characters of A-Z a-z 0-9 . _ - ~ : /, not empty)");
  }
  return path;
}

Result<std::chrono::milliseconds> ParseWait(const HttpRequest& req,
                                            std::chrono::milliseconds max) {
  if (!req.HasParam(protocol::kWaitMs)) return std::chrono::milliseconds(0);
  auto wait = common::ParseInt(req.Param(protocol::kWaitMs), protocol::kWaitMs,
                               0, max.count());
  if (!wait.ok()) return wait.status();
  return std::chrono::milliseconds(*wait);
}

std::vector<std::string> SplitKeys(const std::string& list) {
  std::vector<std::string> keys;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    keys.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return keys;
}

namespace {

// A wait of zero that finds keys missing is a plain "not found".
Status WaitFailure(const Status& status, std::chrono::milliseconds wait) {
  if (wait.count() == 0 && status.code() == common::Code::kTimeout) {
    return Status::NotFound(status.message());
  }
  return status;
}

std::string EncodeValues(const KvStore::Values& values) {
  nlohmann::json body;
  nlohmann::json& out = body[protocol::kValues] = nlohmann::json::object();
  for (const auto& [key, value] : values) {
    out[key] = common::Base64Encode(value);
  }
  return body.dump();
}

HttpAnswer Octets(std::string body) {
  HttpAnswer answer;
  answer.content_type = "application/octet-stream";
  answer.body = std::move(body);
  return answer;
}

HttpAnswer HandleMultiGet(const HttpRequest& req, KvStore& store,
                          const std::string& scope,
                          std::chrono::milliseconds wait) {
  auto deadline = KvStore::Clock::now() + wait;
  if (req.HasParam(protocol::kKeys)) {
    std::vector<std::string> keys = SplitKeys(req.Param(protocol::kKeys));
    for (const std::string& key : keys) {
      if (!protocol::IsValidKey(key)) {
        return HttpAnswer::Error(
            Status::InvalidArgument("malformed key '" + Printable(key) +
                                    "' in '" + protocol::kKeys + "'"));
      }
    }
    auto values = store.WaitAll(scope, keys, deadline);
    if (!values.ok())
      return HttpAnswer::Error(WaitFailure(values.status(), wait));
    return HttpAnswer::Json(EncodeValues(*values));
  }
  if (req.HasParam(protocol::kPrefix) && req.HasParam(protocol::kCount)) {
    std::string prefix = req.Param(protocol::kPrefix);
    if (!prefix.empty() && !protocol::IsValidKey(prefix)) {
      return HttpAnswer::Error(Status::InvalidArgument(
          "malformed prefix '" + Printable(prefix) + "'"));
    }
    auto count = common::ParseInt(req.Param(protocol::kCount), protocol::kCount,
                                  0, store.limits().max_keys_per_wait);
    if (!count.ok()) return HttpAnswer::Error(count.status());
    auto snapshot =
        store.WaitPrefix(scope, prefix, static_cast<size_t>(*count), deadline);
    if (!snapshot.ok()) {
      return HttpAnswer::Error(WaitFailure(snapshot.status(), wait));
    }
    const KvStore::PrefixSnapshot& values = **snapshot;
    std::call_once(values.encode_once,
                   [&values] { values.encoded = EncodeValues(values.values); });
    // Every reader's answer is written from this one buffer, which keeps
    // the snapshot alive while any answer still needs it.
    HttpAnswer answer = HttpAnswer::Json("");
    answer.shared_body =
        std::shared_ptr<const std::string>(*snapshot, &values.encoded);
    return answer;
  }
  return HttpAnswer::Error(Status::InvalidArgument(
      std::string("a scope GET needs '") + protocol::kKeys + "' or '" +
      protocol::kPrefix + "' and '" + protocol::kCount + "'"));
}

HttpAnswer HandleGet(const HttpRequest& req, KvStore& store, const KvPath& path,
                     std::chrono::milliseconds max_wait) {
  auto wait = ParseWait(req, max_wait);
  if (!wait.ok()) return HttpAnswer::Error(wait.status());
  if (!path.key) return HandleMultiGet(req, store, path.scope, *wait);
  if (wait->count() == 0) {
    auto value = store.Get(path.scope, *path.key);
    if (!value.ok()) return HttpAnswer::Error(value.status());
    return Octets(std::move(*value));
  }
  auto values =
      store.WaitAll(path.scope, {*path.key}, KvStore::Clock::now() + *wait);
  if (!values.ok())
    return HttpAnswer::Error(WaitFailure(values.status(), *wait));
  return Octets(values->begin()->second);
}

}  // namespace

bool KvNeverBlocks(const HttpRequest& req) {
  if (req.path.compare(0, std::strlen(protocol::kKvPath), protocol::kKvPath))
    return false;
  return req.method != "GET" || !req.HasParam(protocol::kWaitMs) ||
         req.Param(protocol::kWaitMs) == "0";
}

HttpAnswer HandleKv(const HttpRequest& req, KvStore& store,
                    std::chrono::milliseconds max_wait,
                    const std::function<bool(int64_t)>& member_of) {
  auto path = ParseKvPath(
      std::string_view(req.path).substr(std::strlen(protocol::kKvPath)));
  if (!path.ok()) return HttpAnswer::Error(path.status());
  if (req.worker) {
    Status may = WorkerMayUseKv(*req.worker, req.method, *path,
                                [&member_of](int64_t generation) {
                                  return member_of && member_of(generation);
                                });
    if (!may.ok()) return HttpAnswer::Error(may);
  }
  if (req.method == "GET") return HandleGet(req, store, *path, max_wait);
  if (req.method == "PUT") {
    if (!path->key) {
      return HttpAnswer::Error(
          Status::InvalidArgument("PUT needs a key: /v1/kv/<scope>/<key>"));
    }
    Status status = store.Set(path->scope, *path->key, req.body);
    if (!status.ok()) return HttpAnswer::Error(status);
    return HttpAnswer{};
  }
  if (req.method == "DELETE") {
    if (path->key) {
      Status status = store.Delete(path->scope, *path->key);
      if (!status.ok()) return HttpAnswer::Error(status);
      return HttpAnswer{};
    }
    size_t deleted = store.DeleteScope(path->scope);
    return HttpAnswer::Json(nlohmann::json{{"deleted", deleted}}.dump());
  }
  return HttpAnswer::Error(Status::NotFound(
      "no route for " + Printable(req.method) + " " + Printable(req.path)));
}

}  // namespace hvd::rendezvous::internal
