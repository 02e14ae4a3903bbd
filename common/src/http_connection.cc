#include "http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <string>
#include <utility>

#include "hvd/common/hmac.h"

namespace hvd::common {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

namespace {

// The first read of a request asks for this much; the rest of the headers
// grow the buffer up to the header limit.
constexpr size_t kFirstRead = 1024;
// After a refusal, at most this much of what the client still sends is
// read and thrown away, for at most kLingerTime, before the socket closes.
constexpr size_t kLingerBytes = 256 * 1024;
constexpr auto kLingerTime = 1s;
// A write in flight when the server stops gets this long to finish.
constexpr auto kStopGrace = 1s;

std::string Ms(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

bool IsClosedByPeer(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::operation_aborted;
}

}  // namespace

Connection::Connection(SignedHttpServer::Impl& server,
                       asio::ip::tcp::socket socket, ConnectionTable::Id id,
                       std::string peer)
    : server_(server),
      limits_(server.options().limits),
      stream_(std::move(socket)),
      buffer_(limits_.header_bytes + kFirstRead),
      id_(id),
      peer_(std::move(peer)) {}

Connection::~Connection() {
  // Normally Close() ran; when the I/O context is destroyed with this
  // connection's handlers still queued, forget it here.
  if (!closed_) server_.Forget(id_);
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  stream_.close();
  server_.Forget(id_);
}

void Connection::Shutdown() {
  if (writing_) {
    stream_.expires_after(kStopGrace);
    close_after_write_ = true;
    return;
  }
  Close();
}

void Connection::Drop(const std::string& reason) {
  server_.Dropped(peer_, reason);
  Close();
}

void Connection::AwaitRequest() {
  if (closed_) return;
  parser_ = std::make_unique<RequestParser>(limits_.header_bytes,
                                            limits_.header_fields);
  if (buffer_.size() > 0) return ReadHeader();  // pipelined request
  stream_.expires_after(authenticated_ ? limits_.authenticated_idle
                                       : limits_.unauthenticated_idle);
  stream_.async_read_some(
      buffer_.prepare(kFirstRead),
      [self = shared_from_this()](error_code ec, size_t n) {
        self->buffer_.commit(n);
        if (!ec) return self->ReadHeader();
        if (ec == beast::error::timeout && !self->authenticated_) {
          return self->Drop("no request within " +
                            Ms(self->limits_.unauthenticated_idle) +
                            " of connecting");
        }
        self->Close();
      });
}

void Connection::ReadHeader() {
  // A total deadline from the request's first byte: a client that sends a
  // byte a second never resets it.
  stream_.expires_after(limits_.header_deadline);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](error_code ec, size_t) {
                            self->OnHeader(ec);
                          });
}

void Connection::OnReadError(error_code ec, const char* stage,
                             std::chrono::milliseconds deadline) {
  if (ec == beast::error::timeout) {
    return Drop(std::string(stage) + " did not arrive within " + Ms(deadline));
  }
  if (IsClosedByPeer(ec)) return Close();
  body_unread_ = true;
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return Refuse(431, Status::ResourceExhausted(
                           "request line and headers over " +
                           std::to_string(limits_.header_bytes) + " bytes or " +
                           std::to_string(limits_.header_fields) + " fields"));
  }
  if (ec == http::error::body_limit) {
    return Refuse(
        413, Status::ResourceExhausted(
                 "body over " + std::to_string(limits_.body_bytes) + " bytes"));
  }
  Refuse(400, Status::InvalidArgument(std::string("malformed ") + stage + ": " +
                                      ec.message()));
}

void Connection::OnHeader(error_code ec) {
  if (ec) {
    return OnReadError(ec, "request line and headers", limits_.header_deadline);
  }
  stream_.expires_never();
  version_ = parser_->version();
  keep_alive_ = parser_->keep_alive();
  body_unread_ = !parser_->is_done();
  if (version_ != 10 && version_ != 11) {
    return Refuse(400, Status::InvalidArgument(
                           "HTTP version " + std::to_string(version_ / 10) +
                           "." + std::to_string(version_ % 10) +
                           " (this server speaks HTTP/1.1 and 1.0)"));
  }
  if (server_.stopping()) {
    return Refuse(503, Status::Aborted("the server is shutting down"));
  }
  const HttpServerOptions& options = server_.options();
  if (options.access == HttpAccess::kReadToken) {
    Status allowed = CheckReadToken();
    if (!allowed.ok()) {
      return Refuse(allowed.code() == Code::kUnauthenticated ? 401 : 405,
                    allowed);
    }
  } else {
    const int64_t now = WallClockMs();
    // The job secret, or the key of the worker the request names.
    const std::string* key = &options.secret;
    worker_.reset();
    if (!parser_->worker().empty()) {
      if (!options.worker_keys) {
        return Refuse(401, Status::Unauthenticated(
                               std::string("this server takes no worker "
                                           "keys (") +
                               kWorkerHeader + ")"));
      }
      auto known =
          server_.worker_keys().Lookup(options.secret, parser_->worker());
      if (!known.ok()) return Refuse(401, known.status());
      key = &(*known)->key;
      worker_ = (*known)->who;
    }
    auto signed_at =
        VerifyRequestHeaders(*key, parser_->method(), parser_->target(),
                             parser_->signature(), now, options.auth_window);
    if (!signed_at.ok()) return Refuse(401, signed_at.status());
    Status fresh =
        server_.AdmitNonce(parser_->signature().nonce, *signed_at, now);
    if (!fresh.ok()) {
      return Refuse(fresh.code() == Code::kResourceExhausted ? 503 : 401,
                    fresh);
    }
  }
  if (!authenticated_) {
    authenticated_ = true;
    server_.MarkAuthenticated(id_);
  }
  auto length = parser_->content_length();
  if (length && *length > limits_.body_bytes) {
    return Refuse(413, Status::ResourceExhausted(
                           "Content-Length " + std::to_string(*length) +
                           " is over this server's limit of " +
                           std::to_string(limits_.body_bytes) + " bytes"));
  }
  body_digest_.assign(parser_->signature().content_sha256);
  if (parser_->is_done()) return Dispatch();
  // A chunked body may grow to the limit: that much is held for it.
  const uint64_t announced = length ? *length : limits_.body_bytes;
  auto reserved = server_.bodies().Reserve(announced);
  if (!reserved) {
    return Refuse(
        503,
        Status::ResourceExhausted(
            "this server holds " + std::to_string(server_.bodies().held()) +
            " bytes of request bodies, and " + std::to_string(announced) +
            " more would pass its limit of " +
            std::to_string(server_.bodies().limit()) + " (retry)"));
  }
  reservation_.emplace(std::move(*reserved));
  parser_->AllowBody(limits_.body_bytes);
  ReadBody();
}

Status Connection::CheckReadToken() const {
  // A reader only reads: no other method, and no body to read.
  if (parser_->method() != "GET") {
    return Status::InvalidArgument(
        "this server is read-only: " + Printable(parser_->method(), 16) +
        " is not allowed (GET only)");
  }
  if (!parser_->is_done()) {
    return Status::InvalidArgument(
        "this server is read-only: a request "
        "with a body is not allowed");
  }
  std::string token = parser_->bearer();
  if (token.empty()) {
    auto target = ParseTarget(parser_->target());
    if (target.ok()) {
      for (const auto& [name, value] : target->params) {
        if (name == "token") {
          token = value;
          break;
        }
      }
    }
  }
  if (token.empty() ||
      !ConstantTimeEquals(token, server_.options().read_token)) {
    return Status::Unauthenticated(
        "this page needs the token of the URL hvdrun printed (?token=...)");
  }
  return Status::Ok();
}

void Connection::ReadBody() {
  stream_.expires_after(limits_.body_deadline);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
}

void Connection::OnBody(error_code ec) {
  if (ec) return OnReadError(ec, "body", limits_.body_deadline);
  stream_.expires_never();
  body_unread_ = false;
  keep_alive_ = parser_->keep_alive();
  Dispatch();
}

void Connection::Dispatch() {
  if (server_.stopping()) {
    return Refuse(503, Status::Aborted("the server is shutting down"));
  }
  HttpRequest request;
  request.method = parser_->method();
  request.target = parser_->target();
  request.body = std::move(parser_->body());
  request.peer = peer_;
  request.worker = std::move(worker_);
  parser_.reset();
  // A small body's digest is checked here; a request that never blocks
  // then runs here too, without two hand-offs between threads.
  const bool prepared = request.body.size() <= kInlineBodyBytes;
  if (prepared) {
    std::optional<HandledRequest> done = server_.Prepare(request, body_digest_);
    if (!done && server_.RunsInline(request)) done = server_.Run(request);
    if (done) {
      reservation_.reset();
      return Finish(std::move(*done));
    }
  }
  asio::post(server_.pool(),
             [self = shared_from_this(), prepared, request = std::move(request),
              digest = std::move(body_digest_),
              reservation = std::move(reservation_)]() mutable {
               std::optional<HandledRequest> handled;
               if (!prepared) handled = self->server_.Prepare(request, digest);
               if (!handled) handled = self->server_.Run(request);
               request = {};
               reservation.reset();  // the body is gone with the request
               asio::post(self->server_.io(),
                          [self, handled = std::move(*handled)]() mutable {
                            self->Finish(std::move(handled));
                          });
             });
}

void Connection::Finish(HandledRequest handled) {
  if (closed_) return;
  if (!handled.refusal.empty()) {
    server_.Refused(handled.answer.status, peer_, handled.refusal);
  }
  Answer(std::move(handled.answer), !handled.refusal.empty());
}

void Connection::Refuse(int http_status, const Status& why) {
  if (http_status != 503) server_.Refused(http_status, peer_, why.message());
  Answer(HttpAnswer::Error(http_status, why), /*close=*/true);
}

void Connection::Answer(HttpAnswer answer, bool close) {
  if (closed_) return;
  close_after_write_ = close || !keep_alive_ || server_.stopping();
  response_ = {};
  response_.version(version_ == 10 ? 10 : 11);
  response_.result(static_cast<unsigned>(answer.status));
  if (!answer.content_type.empty()) {
    response_.set(http::field::content_type, answer.content_type);
  }
  for (const auto& [name, value] : answer.headers) response_.set(name, value);
  body_ = answer.shared_body
              ? std::move(answer.shared_body)
              : std::make_shared<const std::string>(std::move(answer.body));
  response_.body() =
      boost::beast::span<const char>(body_->data(), body_->size());
  response_.keep_alive(!close_after_write_);
  response_.prepare_payload();
  server_.CountAnswer(answer.status);
  writing_ = true;
  stream_.expires_after(server_.stopping() ? kStopGrace
                                           : limits_.write_deadline);
  http::async_write(stream_, response_,
                    [self = shared_from_this()](error_code ec, size_t) {
                      self->OnWritten(ec);
                    });
}

void Connection::OnWritten(error_code ec) {
  writing_ = false;
  response_ = {};
  body_.reset();
  if (ec || closed_) return Close();
  if (close_after_write_ || server_.stopping()) {
    if (body_unread_ && !server_.stopping()) return Linger();
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    return Close();
  }
  AwaitRequest();
}

void Connection::Linger() {
  // Closing a socket with unread input sends a reset, which can destroy the
  // answer before the client reads it. Half-close, read a little, then go.
  error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(kLingerTime);
  Drain();
}

void Connection::Drain() {
  buffer_.consume(buffer_.size());
  stream_.async_read_some(buffer_.prepare(kFirstRead),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            self->drained_ += n;
                            if (ec || self->drained_ >= kLingerBytes)
                              return self->Close();
                            self->Drain();
                          });
}

}  // namespace hvd::common
