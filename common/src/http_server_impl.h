// The inside of SignedHttpServer (http_server.h): the I/O thread's state
// (acceptor, connection table, replay guard, refusal log) and the handler
// pool. Connection (http_connection.h) calls the "I/O thread" methods; the
// handler pool calls Handle(). Boost stays out of the public header.
#pragma once

#include <spdlog/spdlog.h>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "body_budget.h"
#include "connection_table.h"
#include "hvd/common/http_server.h"
#include "hvd/common/worker_key.h"
#include "refusal_log.h"
#include "replay_guard.h"

namespace hvd::common {

class Connection;

// What the handler pool hands back to the I/O thread.
struct HandledRequest {
  HttpAnswer answer;
  // Set when the server core refused the request (the body did not match
  // its signed digest): counted as a refusal, and the connection closes.
  std::string refusal;
};

class SignedHttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Handler handler);
  ~Impl();

  Status Listen();
  void Stop();
  int port() const { return port_; }
  HttpServerCounters counters() const;

  // ---- I/O thread only ----
  const HttpServerOptions& options() const { return options_; }
  boost::asio::io_context& io() { return io_; }
  boost::asio::thread_pool& pool() { return pool_; }
  bool stopping() const { return stopping_; }
  Status AdmitNonce(std::string_view nonce, int64_t timestamp_ms,
                    int64_t now_ms);
  void MarkAuthenticated(ConnectionTable::Id id);
  void Forget(ConnectionTable::Id id);
  void Refused(int http_status, const std::string& peer,
               const std::string& reason);
  void Dropped(const std::string& peer, const std::string& reason);
  void CountAnswer(int http_status);
  BodyBudget& bodies() { return bodies_; }
  WorkerKeyCache& worker_keys() { return worker_keys_; }

  // ---- handler pool, or the I/O thread for requests RunsInline takes ----
  // Checks the body against its signed digest and parses the target into
  // `request`; the answer when the request goes no further.
  std::optional<HandledRequest> Prepare(HttpRequest& request,
                                        const std::string& body_digest);
  // Whether a prepared request runs on the I/O thread (never_blocks).
  bool RunsInline(const HttpRequest& request) const;
  // Runs the handler on a prepared request; never throws.
  HandledRequest Run(const HttpRequest& request);

 private:
  void Accept();
  void OnAccept(boost::system::error_code ec,
                boost::asio::ip::tcp::socket socket);
  void Evict(ConnectionTable::Id id, const std::string& reason);
  void ScheduleSummary();
  void CountHandlerTime(std::chrono::steady_clock::duration took);
  void LogSummary(bool flush = false);
  // Runs `task` on the I/O thread and waits for it.
  void RunOnIo(std::function<void()> task);

  const HttpServerOptions options_;
  const Handler handler_;
  // The default logger when the server started, held: a server that a
  // static owns stops (and logs its last summary) while the process exits,
  // after spdlog's registry may be gone.
  const std::shared_ptr<spdlog::logger> logger_;
  int port_ = 0;
  ConnectionTable table_;
  ReplayGuard replay_;
  RefusalLog refusals_;
  BodyBudget bodies_;  // outlives the connections and handlers (below)
  WorkerKeyCache worker_keys_;
  std::unordered_map<ConnectionTable::Id, std::weak_ptr<Connection>>
      connections_;
  bool stopping_ = false;  // I/O thread
  std::atomic<bool> stopped_{false};
  std::array<std::atomic<uint64_t>, kHandlerSecondsBuckets> handler_buckets_{};
  std::atomic<uint64_t> handler_micros_{0};
  std::atomic<uint64_t> total_{0}, ok_2xx_{0}, client_4xx_{0},
      unauthenticated_401_{0}, server_5xx_{0}, dropped_{0};

  // Declared after everything the connections touch: destroying io_ may
  // destroy the last connections, which call Forget().
  boost::asio::thread_pool pool_;
  boost::asio::io_context io_{1};
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  boost::asio::steady_timer summary_timer_{io_};
  boost::asio::steady_timer accept_retry_timer_{io_};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_{io_.get_executor()};
  std::thread io_thread_;
};

}  // namespace hvd::common
