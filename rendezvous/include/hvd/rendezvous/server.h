// RendezvousServer: the driver's HTTP key-value service that workers use to
// find each other (Gloo rendezvous through HttpStore), the elastic check-in
// and the workers' progress reports. Protocol: docs/protocol.md.
//
// Every request must be signed with the job secret or a worker's own key
// (worker_key.h); unsigned, wrongly signed, stale or replayed requests get
// 401 before any handler runs or any body is read. A worker's request for
// something beyond itself gets 403 (src/worker_access.h), logged once per
// worker. Malformed requests get a 4xx answer and never take the server down.
// The HTTP core is common::SignedHttpServer (deadlines, limits, connection
// admission; see http_server.h).
//
// Owned by the driver. Start() returns a running server; Stop() (or the
// destructor) ends every pending long-poll with 503 and joins the threads.
// All methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "hvd/common/http_message.h"
#include "hvd/common/http_server.h"
#include "hvd/common/status.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"
#include "hvd/rendezvous/report_board.h"

namespace hvd::rendezvous {

struct ServerOptions {
  // Where to listen. The driver binds where workers can reach it and no
  // wider; tests use 127.0.0.1.
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port, reported by port()
  std::string secret;
  KvLimits limits;
  // Accepted distance between a request's timestamp and this clock.
  std::chrono::milliseconds auth_window{60000};
  // Longest wait_ms a request may ask for.
  std::chrono::milliseconds max_wait{600000};
  // Handler threads: requests handled at once. Every long-poll holds one
  // for its wait, so size it above the number of workers; idle and
  // unauthenticated connections hold none.
  size_t threads = 128;
  // The etcd backend: a worker's check-in answer carries its generation's
  // key, wrapped for it (WorkerAssignment::generation_key), with which the
  // members seal what they write to etcd.
  bool generation_keys = false;
  // Deadlines, size limits and connection admission of the HTTP core. Its
  // body limit is set from limits.max_value_bytes (plus room for framing).
  common::HttpServerLimits http;
};

class RendezvousServer {
 public:
  // Binds, starts the serving thread and returns once it accepts requests.
  static common::Result<std::unique_ptr<RendezvousServer>> Start(
      ServerOptions options);

  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return options_.bind_host; }
  KvStore& store() { return store_; }
  ElasticBoard& board() { return board_; }
  // The workers' progress reports (POST /v1/elastic/report); the driver
  // admits the slots it runs and reads the latest report of each.
  ReportBoard& reports() { return reports_; }

  // The generation shown by /v1/status; the driver sets it.
  void set_generation(int64_t generation) { generation_ = generation; }

  // Requests answered so far, for benchmarks and /v1/status.
  uint64_t requests_total() const;

  // What /v1/status answers: uptime, generation, the store's size and
  // waiters, and the requests answered by class.
  std::string StatusJson() const;

  void Stop();

 private:
  explicit RendezvousServer(ServerOptions options);
  // Runs on a handler thread for every authenticated request.
  common::HttpAnswer Route(const common::HttpRequest& req);
  common::HttpAnswer RouteFor(const common::HttpRequest& req);
  // A worker's first refusal for acting beyond itself, logged once.
  void LogDenied(const common::WorkerIdentity& who, const std::string& answer);

  const ServerOptions options_;
  const std::string generations_key_;  // with generation_keys only
  KvStore store_;
  ElasticBoard board_;
  ReportBoard reports_;
  std::unique_ptr<common::SignedHttpServer> http_;
  int port_ = 0;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<int64_t> generation_{0};
  std::atomic<bool> stopped_{false};
  static constexpr size_t kMaxDeniedLogged = 1024;
  std::mutex denied_mu_;
  std::set<std::string> denied_logged_;  // X-Hvd-Worker values
};

}  // namespace hvd::rendezvous
