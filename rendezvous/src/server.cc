#include "hvd/rendezvous/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "http_reply.h"
#include "hvd/common/hmac.h"
#include "hvd/common/http_client.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;

namespace internal {

int HttpStatusFor(common::Code code) {
  switch (code) {
    case common::Code::kInvalidArgument:
      return 400;
    case common::Code::kUnauthenticated:
      return 401;
    case common::Code::kNotFound:
      return 404;
    case common::Code::kTimeout:
      return 408;
    case common::Code::kResourceExhausted:
      return 413;
    case common::Code::kAborted:
      return 503;
    default:
      return 500;
  }
}

void ReplyError(httplib::Response& res, const Status& status) {
  res.status = HttpStatusFor(status.code());
  nlohmann::json body{{protocol::kError, common::CodeName(status.code())},
                      {protocol::kMessage, status.message()}};
  // Messages quote the client's bytes (a malformed key), which need not be
  // UTF-8; dump() would throw on them and turn a 400 into a 500.
  res.set_content(
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      "application/json");
}

}  // namespace internal

RendezvousServer::RendezvousServer(ServerOptions options)
    : options_(std::move(options)),
      store_(options_.limits),
      http_(std::make_unique<httplib::Server>()),
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
  Status status = server->Listen();
  if (!status.ok()) return status;
  return server;
}

Status RendezvousServer::Listen() {
  httplib::Server& http = *http_;
  const size_t threads = std::max<size_t>(options_.threads, 2);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_tcp_nodelay(true);
  // Clients keep one connection for the life of a rendezvous; closing it
  // every few requests (httplib's default of 5) costs a TCP handshake each.
  http.set_keep_alive_max_count(1000000);
  http.set_payload_max_length(options_.limits.max_value_bytes + 4096);

  internal::Guard guard = [this](httplib::Server::Handler inner) {
    return [this, inner](const httplib::Request& req, httplib::Response& res) {
      Status auth = common::VerifyRequest(
          options_.secret, req.method, req.target,
          req.get_header_value(common::kTimestampHeader),
          req.get_header_value(common::kSignatureHeader), req.body,
          common::WallClockMs(), options_.auth_window);
      if (!auth.ok()) {
        spdlog::warn("rendezvous: refused {} {} from {}: {}", req.method,
                     req.path, req.remote_addr, auth.message());
        return internal::ReplyError(res, auth);
      }
      inner(req, res);
    };
  };
  internal::AddKvRoutes(http, store_, options_.max_wait, guard);
  internal::AddElasticRoutes(http, board_, options_.max_wait, guard);
  http.Get(protocol::kStatusPath,
           guard([this](const httplib::Request&, httplib::Response& res) {
             res.status = 200;
             res.set_content(StatusJson(), "application/json");
           }));

  // httplib's own refusals (unknown path, oversized body, bad request line)
  // come without a body; give them the same JSON error shape as ours.
  http.set_error_handler([](const httplib::Request& req,
                            httplib::Response& res) {
    if (!res.body.empty()) return;
    common::Code code = res.status == 413   ? common::Code::kResourceExhausted
                        : res.status == 404 ? common::Code::kNotFound
                                            : common::Code::kInvalidArgument;
    internal::ReplyError(
        res, Status(code, common::HttpStatusText(res.status) + " for " +
                              req.method + " " + req.path));
  });
  http.set_exception_handler([](const httplib::Request& req,
                                httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("rendezvous: handler for {} {} threw: {}", req.method,
                  req.path, what);
    internal::ReplyError(res, Status::Internal(what));
  });
  http.set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) {
        spdlog::debug("rendezvous: {} {} -> {}", req.method, req.target,
                      res.status);
        ++requests_total_;
        if (res.status == 401) ++answered_401_;
        if (res.status >= 500) {
          ++answered_5xx_;
        } else if (res.status >= 400) {
          ++answered_4xx_;
        } else {
          ++answered_2xx_;
        }
      });

  // httplib listens with a backlog of 5; a thousand workers connecting at
  // once would overflow it and wait a full SYN retransmit (1 s). Remember
  // the socket so the backlog can be raised after bind.
  auto listen_fd = std::make_shared<int>(-1);
  http.set_socket_options([listen_fd](int fd) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listen_fd = fd;
  });
  if (options_.port == 0) {
    port_ = http.bind_to_any_port(options_.bind_host);
  } else {
    port_ = http.bind_to_port(options_.bind_host, options_.port) ? options_.port
                                                                 : -1;
  }
  if (port_ <= 0) {
    return Status::InvalidArgument("rendezvous server cannot listen on " +
                                   options_.bind_host + ":" +
                                   std::to_string(options_.port) +
                                   " (address not local, or port in use?)");
  }
  if (*listen_fd >= 0) ::listen(*listen_fd, SOMAXCONN);
  serving_thread_ = std::thread([this] {
    http_->listen_after_bind();
    serving_ended_ = true;
  });
  // httplib's stop() is a no-op until the accept loop runs, so a Stop()
  // right after Start() would leave the loop running forever. httplib
  // offers no signal for "running"; this spin lasts microseconds.
  while (!http_->is_running() && !serving_ended_) std::this_thread::yield();
  if (!http_->is_running()) {
    serving_thread_.join();
    return Status::Internal("rendezvous server's accept loop ended at once");
  }
  spdlog::info("rendezvous: serving on {}:{} with {} threads",
               options_.bind_host, port_, threads);
  return Status::Ok();
}

std::string RendezvousServer::StatusJson() const {
  KvStats stats = store_.Stats();
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
                       {{"total", requests_total_.load()},
                        {"2xx", answered_2xx_.load()},
                        {"4xx", answered_4xx_.load()},
                        {"401", answered_401_.load()},
                        {"5xx", answered_5xx_.load()}}}};
  return body.dump();
}

void RendezvousServer::Stop() {
  if (stopped_.exchange(true)) return;
  // Wake long-polls first: httplib's stop joins its threads, and a thread
  // parked in a wait would hold that join for the wait's whole budget.
  store_.Shutdown();
  board_.Close();
  http_->stop();
  if (serving_thread_.joinable()) serving_thread_.join();
}

}  // namespace hvd::rendezvous
