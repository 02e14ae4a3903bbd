#include "hvd/rendezvous/server.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "http_reply.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous {

using common::HttpAnswer;
using common::HttpRequest;
using common::Result;
using common::Status;

RendezvousServer::RendezvousServer(ServerOptions options)
    : options_(std::move(options)),
      generations_key_(options_.generation_keys
                           ? common::GenerationsKey(options_.secret)
                           : ""),
      store_(options_.limits),
      started_(std::chrono::steady_clock::now()) {}

RendezvousServer::~RendezvousServer() { Stop(); }

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    ServerOptions options) {
  if (options.secret.empty()) {
    return Status::InvalidArgument(
        "the rendezvous server needs a job secret to check signatures");
  }
  std::unique_ptr<RendezvousServer> server(
      new RendezvousServer(std::move(options)));
  const ServerOptions& o = server->options_;
  common::HttpServerOptions http;
  http.name = "rendezvous";
  http.bind_host = o.bind_host;
  http.port = o.port;
  http.secret = o.secret;
  http.worker_keys = true;  // workers sign with their own keys
  http.auth_window = o.auth_window;
  http.handler_threads = std::max<size_t>(o.threads, 2);
  http.never_blocks = internal::KvNeverBlocks;
  http.limits = o.http;
  // A value at the store's limit plus room; a larger body is refused (413)
  // before it is read.
  http.limits.body_bytes = o.limits.max_value_bytes + 4096;
  RendezvousServer* self = server.get();
  auto started = common::SignedHttpServer::Start(
      std::move(http),
      [self](const HttpRequest& req) { return self->Route(req); });
  if (!started.ok()) return started.status();
  server->http_ = std::move(*started);
  server->port_ = server->http_->port();
  return server;
}

HttpAnswer RendezvousServer::Route(const HttpRequest& req) {
  HttpAnswer answer = RouteFor(req);
  if (answer.status == 403 && req.worker) LogDenied(*req.worker, answer.body);
  return answer;
}

HttpAnswer RendezvousServer::RouteFor(const HttpRequest& req) {
  if (req.path.compare(0, std::strlen(protocol::kKvPath), protocol::kKvPath) ==
      0) {
    return internal::HandleKv(
        req, store_, options_.max_wait, [this, &req](int64_t generation) {
          return board_.IsMember(generation, req.worker->slot,
                                 req.worker->worker);
        });
  }
  if (req.method == "GET" && req.path == protocol::kStatusPath) {
    return HttpAnswer::Json(StatusJson());
  }
  if (req.method == "GET" && req.path == protocol::kCheckInPath) {
    if (!options_.generation_keys) {
      return internal::HandleCheckIn(req, board_, options_.max_wait);
    }
    return internal::HandleCheckIn(
        req, board_, options_.max_wait,
        [this](const common::WorkerIdentity& who, int64_t generation) {
          return common::WrapGenerationKey(
              common::WorkerKey(options_.secret, who), generation,
              common::GenerationKey(generations_key_, generation));
        });
  }
  if (req.method == "POST" && req.path == protocol::kReportPath) {
    return internal::HandleReport(req, reports_);
  }
  return HttpAnswer::Error(Status::NotFound("no route for " +
                                            common::Printable(req.method) +
                                            " " + common::Printable(req.path)));
}

void RendezvousServer::LogDenied(const common::WorkerIdentity& who,
                                 const std::string& answer) {
  std::lock_guard<std::mutex> lock(denied_mu_);
  // Once per worker, and for a bounded number of them: a worker that asks
  // again and again does not fill the log, nor this set.
  if (denied_logged_.size() >= kMaxDeniedLogged ||
      !denied_logged_.insert(who.Header()).second) {
    return;
  }
  spdlog::warn(
      "rendezvous: refused (403) a request of {} (its first refusal, and "
      "the only one logged): {}",
      who.Describe(), answer);
}

uint64_t RendezvousServer::requests_total() const {
  return http_ ? http_->counters().total : 0;
}

std::string RendezvousServer::StatusJson() const {
  KvStats stats = store_.Stats();
  common::HttpServerCounters answered = http_->counters();
  double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_)
          .count();
  nlohmann::json body{{"uptime_s", uptime},
                      {"generation", generation_.load()},
                      {"scopes", stats.scopes},
                      {"keys", stats.keys},
                      {"bytes", stats.bytes},
                      {"waiters", stats.waiters},
                      {"requests",
                       {{"total", answered.total},
                        {"2xx", answered.ok_2xx},
                        {"4xx", answered.client_4xx},
                        {"401", answered.unauthenticated_401},
                        {"5xx", answered.server_5xx},
                        {"dropped_connections", answered.dropped_connections}}},
                      {"handler_seconds",
                       {{"bounds", common::kHandlerSecondsBounds},
                        {"counts", answered.handler_seconds},
                        {"sum", answered.handler_seconds_sum}}}};
  return body.dump();
}

void RendezvousServer::Stop() {
  if (stopped_.exchange(true)) return;
  // Wake long-polls first: the HTTP core waits for running handlers, and a
  // handler parked in a wait would hold that for the wait's whole budget.
  store_.Shutdown();
  board_.Close();
  if (http_) http_->Stop();
}

}  // namespace hvd::rendezvous
