// Connection: one client connection of a SignedHttpServer, as a chain of
// asynchronous steps on the server's I/O thread:
//   AwaitRequest (idle deadline) -> ReadHeader (header deadline from the
//   first byte) -> OnHeader (signature, nonce, Content-Length) -> ReadBody
//   (body deadline) -> Dispatch (handler pool, or here for a request that
//   never blocks) -> Answer (write deadline)
//   -> AwaitRequest again, or close.
// Refusals are answered and the connection closed after a short bounded
// drain ("lingering close"), so the client can read the answer instead of
// a reset. Every method runs on the I/O thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/span_body.hpp>
#include <memory>
#include <optional>
#include <string>

#include "http_server_impl.h"
#include "request_parser.h"

namespace hvd::common {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(SignedHttpServer::Impl& server,
             boost::asio::ip::tcp::socket socket, ConnectionTable::Id id,
             std::string peer);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start() { AwaitRequest(); }
  // Closes now; pending operations end with operation_aborted.
  void Close();
  // The server is stopping: close, unless an answer is being written, which
  // then gets a short grace.
  void Shutdown();
  const std::string& peer() const { return peer_; }

 private:
  using error_code = boost::system::error_code;

  void AwaitRequest();
  void ReadHeader();
  void OnHeader(error_code ec);
  // kReadToken access: a GET without a body that carries the read token.
  // kUnauthenticated without the token, kInvalidArgument for the rest.
  Status CheckReadToken() const;
  void ReadBody();
  void OnBody(error_code ec);
  void Dispatch();
  // Writes what the handler (or the body check) answered.
  void Finish(HandledRequest handled);
  void Answer(HttpAnswer answer, bool close);
  // Answers `status` with the reason, counts the refusal, closes after.
  void Refuse(int http_status, const Status& why);
  void OnWritten(error_code ec);
  void Linger();
  void Drain();
  void Drop(const std::string& reason);
  // Ends a read that failed: a deadline is a drop, a parse error a refusal,
  // a closed connection just closes.
  void OnReadError(error_code ec, const char* stage,
                   std::chrono::milliseconds deadline);

  SignedHttpServer::Impl& server_;
  const HttpServerLimits& limits_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::unique_ptr<RequestParser> parser_;
  // The answer being written; its body is a view of body_, which it may
  // share with other connections' answers (HttpAnswer::shared_body).
  boost::beast::http::response<boost::beast::http::span_body<const char>>
      response_;
  std::shared_ptr<const std::string> body_;
  const ConnectionTable::Id id_;
  const std::string peer_;  // "<address>:<port>"
  std::string body_digest_;
  std::optional<WorkerIdentity> worker_;  // the request's signer, if a worker
  // This request's share of the server's body budget, from its headers to
  // the end of its handler.
  std::optional<BodyBudget::Reservation> reservation_;
  int version_ = 11;
  bool keep_alive_ = true;
  bool authenticated_ = false;
  bool writing_ = false;
  bool close_after_write_ = false;
  bool body_unread_ = false;  // a refusal left request bytes unread
  bool closed_ = false;
  size_t drained_ = 0;
};

}  // namespace hvd::common
