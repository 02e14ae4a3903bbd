#include "hvd/notify/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "hvd/common/hmac.h"
#include "hvd/notify/messages.h"

namespace hvd::notify {

using common::Result;
using common::Status;

namespace {

void Reply(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content("{\"message\": \"" + message + "\"}", "application/json");
}

// Monotonic maximum: messages may arrive out of order.
void RaiseTo(std::atomic<int64_t>& value, int64_t candidate) {
  int64_t seen = value;
  while (candidate > seen && !value.compare_exchange_weak(seen, candidate)) {
  }
}

}  // namespace

NotificationServer::NotificationServer(std::string host, std::string secret,
                                       AbortHandler on_abort)
    : host_(std::move(host)),
      secret_(std::move(secret)),
      on_abort_(std::move(on_abort)),
      http_(std::make_unique<httplib::Server>()) {}

Result<std::unique_ptr<NotificationServer>> NotificationServer::Start(
    const std::string& bind_host, const std::string& secret,
    AbortHandler on_abort) {
  std::unique_ptr<NotificationServer> server(
      new NotificationServer(bind_host, secret, std::move(on_abort)));
  httplib::Server& http = *server->http_;
  // One driver, a message now and then; a few threads and a short read
  // timeout so that idle connections (anyone may open one) cannot starve
  // the driver or hold up shutdown.
  http.new_task_queue = [] { return new httplib::ThreadPool(8); };
  http.set_read_timeout(2, 0);
  http.set_keep_alive_timeout(2);
  http.set_payload_max_length(1 << 20);
  NotificationServer* self = server.get();
  auto signed_by_driver = [self](const httplib::Request& req) {
    Status auth = common::VerifyRequest(
        self->secret_, req.method, req.target,
        req.get_header_value(common::kTimestampHeader),
        req.get_header_value(common::kSignatureHeader), req.body,
        common::WallClockMs(), std::chrono::milliseconds(60000));
    if (!auth.ok()) {
      spdlog::warn("notification server: refused {} from {}: {}", req.path,
                   req.remote_addr, auth.message());
    }
    return auth.ok();
  };
  http.Post(kHostsUpdatedPath,
            [self, signed_by_driver](const httplib::Request& req,
                                     httplib::Response& res) {
              if (!signed_by_driver(req))
                return Reply(res, 401, "unauthenticated");
              auto message = DecodeHostsUpdated(req.body);
              if (!message.ok())
                return Reply(res, 400, "malformed HostsUpdated");
              RaiseTo(self->latest_sequence_, message->sequence);
              RaiseTo(self->latest_generation_, message->generation);
              spdlog::info(
                  "hosts updated (sequence {}, generation {}): {} added, {} "
                  "removed",
                  message->sequence, message->generation, message->added.size(),
                  message->removed.size());
              Reply(res, 200, "ok");
            });
  http.Post(kPingPath, [signed_by_driver](const httplib::Request& req,
                                          httplib::Response& res) {
    if (!signed_by_driver(req)) return Reply(res, 401, "unauthenticated");
    Reply(res, 200, "ok");
  });
  http.Post(kAbortPath, [self, signed_by_driver](const httplib::Request& req,
                                                 httplib::Response& res) {
    if (!signed_by_driver(req)) return Reply(res, 401, "unauthenticated");
    auto message = DecodeAbort(req.body);
    if (!message.ok()) return Reply(res, 400, "malformed Abort");
    if (self->on_abort_) self->on_abort_(*message);
    Reply(res, 200, "ok");
  });
  server->port_ = http.bind_to_any_port(bind_host);
  if (server->port_ <= 0) {
    return Status::InvalidArgument("notification server cannot listen on " +
                                   bind_host);
  }
  auto ended = std::make_shared<std::atomic<bool>>(false);
  server->thread_ = std::thread([self, ended] {
    self->http_->listen_after_bind();
    *ended = true;
  });
  // stop() is a no-op until the accept loop runs (see the rendezvous
  // server); wait for it so that the destructor can always stop it.
  while (!http.is_running() && !*ended) std::this_thread::yield();
  if (!http.is_running()) {
    return Status::Internal("notification server's accept loop ended at once");
  }
  return server;
}

NotificationServer::~NotificationServer() {
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string NotificationServer::address() const {
  return host_ + ":" + std::to_string(port_);
}

}  // namespace hvd::notify
