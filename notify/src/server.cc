#include "hvd/notify/server.h"

#include <spdlog/spdlog.h>

#include "hvd/common/http_server.h"
#include "hvd/notify/messages.h"

namespace hvd::notify {

using common::HttpAnswer;
using common::HttpRequest;
using common::Result;
using common::Status;

namespace {

// Monotonic maximum: messages may arrive out of order.
void RaiseTo(std::atomic<int64_t>& value, int64_t candidate) {
  int64_t seen = value;
  while (candidate > seen && !value.compare_exchange_weak(seen, candidate)) {
  }
}

HttpAnswer Taken() { return HttpAnswer::Json("{\"message\": \"ok\"}"); }

}  // namespace

NotificationServer::NotificationServer(std::string host, AbortHandler on_abort)
    : host_(std::move(host)), on_abort_(std::move(on_abort)) {}

Result<std::unique_ptr<NotificationServer>> NotificationServer::Start(
    const std::string& bind_host, const std::string& secret,
    AbortHandler on_abort) {
  std::unique_ptr<NotificationServer> server(
      new NotificationServer(bind_host, std::move(on_abort)));
  common::HttpServerOptions http;
  http.name = "notification server";
  http.bind_host = bind_host;
  http.secret = secret;
  // One driver, a message now and then.
  http.handler_threads = 2;
  http.limits.body_bytes = 1 << 20;
  NotificationServer* self = server.get();
  auto started = common::SignedHttpServer::Start(
      std::move(http),
      [self](const HttpRequest& req) { return self->Route(req); });
  if (!started.ok()) return started.status();
  server->http_ = std::move(*started);
  server->port_ = server->http_->port();
  spdlog::info("notification server: listening on {}", server->address());
  return server;
}

HttpAnswer NotificationServer::Route(const HttpRequest& req) {
  if (req.method == "POST" && req.path == kHostsUpdatedPath) {
    auto message = DecodeHostsUpdated(req.body);
    if (!message.ok()) return HttpAnswer::Error(message.status());
    RaiseTo(latest_sequence_, message->sequence);
    {
      std::lock_guard<std::mutex> lock(changes_mu_);
      if (message->generation > changes_generation_) {
        changes_generation_ = message->generation;
        changes_ = 0;
      }
      if (message->generation == changes_generation_) {
        changes_ |= (message->removed.empty() ? 0 : kHostsRemoved) |
                    (message->added.empty() ? 0 : kHostsAdded);
      }
    }
    RaiseTo(latest_generation_, message->generation);
    spdlog::info(
        "hosts updated (sequence {}, generation {}): {} added, {} removed",
        message->sequence, message->generation, message->added.size(),
        message->removed.size());
    return Taken();
  }
  if (req.method == "POST" && req.path == kPingPath) return Taken();
  if (req.method == "POST" && req.path == kAbortPath) {
    auto message = DecodeAbort(req.body);
    if (!message.ok()) return HttpAnswer::Error(message.status());
    if (on_abort_) on_abort_(*message);
    return Taken();
  }
  return HttpAnswer::Error(Status::NotFound(
      "no route for " + common::Printable(req.method) + " " +
      common::Printable(req.path)));
}

int NotificationServer::latest_changes() const {
  std::lock_guard<std::mutex> lock(changes_mu_);
  return changes_;
}

NotificationServer::~NotificationServer() {
  if (http_) http_->Stop();
}

std::string NotificationServer::address() const {
  return host_ + ":" + std::to_string(port_);
}

}  // namespace hvd::notify
