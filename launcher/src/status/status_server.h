// StatusServer: hvdrun's read-only window on the job (docs/design.md,
// "Watching a job"): the status page at /, its data at /status.json, and
// Prometheus metrics at /metrics.
//
// Access: GET only, with the job's read token (`?token=` as in the URL
// hvdrun prints, or `Authorization: Bearer`). The token is not the job
// secret: it lets a reader read, and signs nothing. The server is
// SignedHttpServer's core in its read-token mode, so a stranger's requests
// are refused before any handler runs and cannot stall the job, which runs
// on other threads and another server.
//
// Threads: the handler threads call `source` for every request; it must be
// thread-safe. All methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "hvd/common/http_server.h"
#include "hvd/common/status.h"

namespace hvd::launcher {

struct StatusServerOptions {
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: ephemeral
  std::string token;
};

// The read token kept in `path` (--status-token-file), by the rules of
// common::SecretFromFile: 16 to 256 characters; a missing file is made.
common::Result<std::string> StatusTokenFrom(const std::string& path);

class StatusServer {
 public:
  // The job's status now (docs/protocol.md, "GET /status.json"). The same
  // pointer again means nothing changed: its JSON and metrics texts are
  // rendered once and served to every reader until the next one.
  using Source = std::function<std::shared_ptr<const nlohmann::json>()>;

  static common::Result<std::unique_ptr<StatusServer>> Start(
      StatusServerOptions options, Source source);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const { return http_->port(); }
  // "http://<host>:<port>/?token=<token>"; a wildcard bind shows this
  // machine's name.
  std::string url() const;
  void Stop();

 private:
  StatusServer(StatusServerOptions options, Source source);
  common::HttpAnswer Route(const common::HttpRequest& request);
  // The status as status.json or as metrics text, from the cache
  // when the source's status is the one it was rendered from.
  std::string Rendered(bool metrics);

  const StatusServerOptions options_;
  const Source source_;
  std::mutex cache_mu_;
  std::shared_ptr<const nlohmann::json> cached_for_[2];  // json, metrics
  std::string cached_[2];
  std::unique_ptr<common::SignedHttpServer> http_;
};

// The member `key` of a status JSON object, or null when it has none (or
// is no object): a reference, where json::value would copy (a status holds
// a row per rank).
const nlohmann::json& StatusField(const nlohmann::json& object,
                                  const char* key);

// The status JSON as text: what `hvdrun status` prints.
std::string StatusText(const nlohmann::json& status);

// The status JSON in Prometheus' text format (version 0.0.4).
std::string MetricsText(const nlohmann::json& status);

}  // namespace hvd::launcher
