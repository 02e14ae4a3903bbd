// The /v1/kv/... routes: PUT, GET (single, multi-key, by prefix; long-poll)
// and DELETE (key, scope). docs/protocol.md describes them for clients.
#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

#include "http_reply.h"
#include "hvd/common/base64.h"
#include "hvd/common/env.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous::internal {
namespace {

using common::Result;
using common::Status;

struct KvPath {
  std::string scope;
  std::optional<std::string> key;  // nullopt: the path names a scope
};

Result<KvPath> ParseKvPath(const std::string& rest) {
  KvPath path;
  size_t slash = rest.find('/');
  path.scope = rest.substr(0, slash);
  if (slash != std::string::npos) path.key = rest.substr(slash + 1);
  if (!protocol::IsValidScope(path.scope)) {
    return Status::InvalidArgument("malformed scope '" + path.scope +
                                   "' (1-128 characters of A-Z a-z 0-9 . _ -)");
  }
  if (path.key && !protocol::IsValidKey(*path.key)) {
    return Status::InvalidArgument(
        "malformed key '" + *path.key +
        "' (characters of A-Z a-z 0-9 . _ - ~ : /, not empty)");
  }
  return path;
}

Result<std::chrono::milliseconds> ParseWait(const httplib::Request& req,
                                            std::chrono::milliseconds max) {
  if (!req.has_param(protocol::kWaitMs)) return std::chrono::milliseconds(0);
  auto wait = common::ParseInt(req.get_param_value(protocol::kWaitMs),
                               protocol::kWaitMs, 0, max.count());
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

void HandleMultiGet(const httplib::Request& req, httplib::Response& res,
                    KvStore& store, const std::string& scope,
                    std::chrono::milliseconds wait) {
  auto deadline = KvStore::Clock::now() + wait;
  if (req.has_param(protocol::kKeys)) {
    std::vector<std::string> keys =
        SplitKeys(req.get_param_value(protocol::kKeys));
    for (const std::string& key : keys) {
      if (!protocol::IsValidKey(key)) {
        return ReplyError(
            res, Status::InvalidArgument("malformed key '" + key + "' in '" +
                                         protocol::kKeys + "'"));
      }
    }
    auto values = store.WaitAll(scope, keys, deadline);
    if (!values.ok()) {
      return ReplyError(res, WaitFailure(values.status(), wait));
    }
    res.status = 200;
    res.set_content(EncodeValues(*values), "application/json");
    return;
  }
  if (req.has_param(protocol::kPrefix) && req.has_param(protocol::kCount)) {
    std::string prefix = req.get_param_value(protocol::kPrefix);
    if (!prefix.empty() && !protocol::IsValidKey(prefix)) {
      return ReplyError(
          res, Status::InvalidArgument("malformed prefix '" + prefix + "'"));
    }
    auto count =
        common::ParseInt(req.get_param_value(protocol::kCount),
                         protocol::kCount, 0, store.limits().max_keys_per_wait);
    if (!count.ok()) return ReplyError(res, count.status());
    auto snapshot =
        store.WaitPrefix(scope, prefix, static_cast<size_t>(*count), deadline);
    if (!snapshot.ok()) {
      return ReplyError(res, WaitFailure(snapshot.status(), wait));
    }
    const KvStore::PrefixSnapshot& values = **snapshot;
    std::call_once(values.encode_once,
                   [&values] { values.encoded = EncodeValues(values.values); });
    res.status = 200;
    res.set_content(values.encoded, "application/json");
    return;
  }
  ReplyError(res, Status::InvalidArgument(std::string("a scope GET needs '") +
                                          protocol::kKeys + "' or '" +
                                          protocol::kPrefix + "' and '" +
                                          protocol::kCount + "'"));
}

}  // namespace

void AddKvRoutes(httplib::Server& http, KvStore& store,
                 std::chrono::milliseconds max_wait, const Guard& guard) {
  static const std::string kPattern = std::string(protocol::kKvPath) + "(.*)";

  http.Put(kPattern,
           guard([&store](const httplib::Request& req, httplib::Response& res) {
             auto path = ParseKvPath(req.matches[1]);
             if (!path.ok()) return ReplyError(res, path.status());
             if (!path->key) {
               return ReplyError(res,
                                 Status::InvalidArgument(
                                     "PUT needs a key: /v1/kv/<scope>/<key>"));
             }
             Status status = store.Set(path->scope, *path->key, req.body);
             if (!status.ok()) return ReplyError(res, status);
             res.status = 200;
           }));

  http.Get(kPattern, guard([&store, max_wait](const httplib::Request& req,
                                              httplib::Response& res) {
             auto path = ParseKvPath(req.matches[1]);
             if (!path.ok()) return ReplyError(res, path.status());
             auto wait = ParseWait(req, max_wait);
             if (!wait.ok()) return ReplyError(res, wait.status());
             if (!path->key)
               return HandleMultiGet(req, res, store, path->scope, *wait);
             if (wait->count() == 0) {
               auto value = store.Get(path->scope, *path->key);
               if (!value.ok()) return ReplyError(res, value.status());
               res.status = 200;
               res.set_content(*value, "application/octet-stream");
               return;
             }
             auto values = store.WaitAll(path->scope, {*path->key},
                                         KvStore::Clock::now() + *wait);
             if (!values.ok()) {
               return ReplyError(res, WaitFailure(values.status(), *wait));
             }
             res.status = 200;
             res.set_content(values->begin()->second,
                             "application/octet-stream");
           }));

  http.Delete(kPattern, guard([&store](const httplib::Request& req,
                                       httplib::Response& res) {
                auto path = ParseKvPath(req.matches[1]);
                if (!path.ok()) return ReplyError(res, path.status());
                if (path->key) {
                  Status status = store.Delete(path->scope, *path->key);
                  if (!status.ok()) return ReplyError(res, status);
                  res.status = 200;
                  return;
                }
                size_t deleted = store.DeleteScope(path->scope);
                res.status = 200;
                res.set_content(nlohmann::json{{"deleted", deleted}}.dump(),
                                "application/json");
              }));
}

}  // namespace hvd::rendezvous::internal
