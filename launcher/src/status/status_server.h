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
// One server serves an hvdrun from its start to its end: a standby's
// answers while it stands by (Follow: standby_status.h), the job's status
// once it leads (Lead), so the URL it printed at its start stays the one
// to read.
//
// Threads: the handler threads call the source for every request; it must
// be thread-safe. All methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "hvd/common/http_server.h"
#include "hvd/common/status.h"
#include "status/standby_status.h"

namespace hvd::launcher {

struct StatusServerOptions {
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: ephemeral
  std::string token;
};

// The read token kept in `path` (--status-token-file), by the rules of
// common::SecretFromFile: 16 to 256 characters; a missing file is made.
common::Result<std::string> StatusTokenFrom(const std::string& path);

// The read token of every hvdrun of a job started with --job-secret-file
// and without --status-token-file: HMAC-SHA256 of a label of its own under
// the job's secret, so that a leader and its standbys share it (a reader
// redirected from a standby keeps its ?token=), while the token reveals
// nothing of the secret and signs nothing the job's servers accept.
std::string StatusTokenFromJobSecret(const std::string& secret);

class StatusServer {
 public:
  // The job's status now (docs/protocol.md, "GET /status.json"). The same
  // pointer again means nothing changed: its JSON and metrics texts are
  // rendered once and served to every reader until the next one; null: a
  // job starting.
  using Source = std::function<std::shared_ptr<const nlohmann::json>()>;

  // `source` may be empty: a job "starting" until Follow or Lead.
  static common::Result<std::unique_ptr<StatusServer>> Start(
      StatusServerOptions options, Source source);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const { return http_->port(); }
  // "http://<host>:<port>/?token=<token>"; a wildcard bind shows this
  // machine's name.
  std::string url() const;
  // "http://<host>:<port>": url() without path and token.
  std::string base_url() const;
  const std::string& bind_host() const { return options_.bind_host; }
  // Answers as a standby that knows `view` (standby_status.h) until Lead.
  void Follow(StandbyView view);
  // Answers with `source`'s status from now on.
  void Lead(Source source);
  void Stop();

 private:
  StatusServer(StatusServerOptions options, Source source);
  common::HttpAnswer Route(const common::HttpRequest& request);
  common::HttpAnswer StandbyRoute(const StandbyView& view,
                                  const common::HttpRequest& request);
  // The status as status.json or as metrics text, from the cache
  // when the source's status is the one it was rendered from.
  std::string Rendered(const Source& source, bool metrics);

  const StatusServerOptions options_;
  // Before the source has a status (the driver's first snapshot), a reader
  // sees a job starting.
  const std::shared_ptr<const nlohmann::json> starting_;
  std::mutex mode_mu_;
  Source source_;                               // empty: starting
  std::shared_ptr<const StandbyView> standby_;  // set: a standby's answers
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
