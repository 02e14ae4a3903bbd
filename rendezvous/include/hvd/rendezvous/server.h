// RendezvousServer: the driver's HTTP key-value service that workers use to
// find each other (Gloo rendezvous through HttpStore) and, later, the elastic
// control endpoints. Protocol: docs/protocol.md.
//
// Every request must be signed with the job secret; unsigned, wrongly signed
// or stale requests get 401 before any handler runs. Malformed requests get
// a 4xx answer and never take the server down.
//
// Owned by the driver. Start() returns a running server; Stop() (or the
// destructor) ends every pending long-poll with 503 and joins the threads.
// All methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "hvd/common/status.h"
#include "hvd/rendezvous/elastic_board.h"
#include "hvd/rendezvous/kv_store.h"

namespace httplib {
class Server;
}

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
  // Request threads. Every kept-alive client connection and every
  // long-poll occupies one, so size it above the number of clients
  // (workers); connections beyond it queue until a thread frees up.
  size_t threads = 128;
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

  // The generation shown by /v1/status; the driver sets it.
  void set_generation(int64_t generation) { generation_ = generation; }

  // Requests answered so far, for benchmarks and /v1/status.
  uint64_t requests_total() const { return requests_total_; }

  void Stop();

 private:
  explicit RendezvousServer(ServerOptions options);
  common::Status Listen();
  std::string StatusJson() const;

  const ServerOptions options_;
  KvStore store_;
  ElasticBoard board_;
  std::unique_ptr<httplib::Server> http_;
  std::thread serving_thread_;
  int port_ = 0;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<int64_t> generation_{0};
  std::atomic<uint64_t> requests_total_{0};
  // Answers by status class: 2xx, 4xx, 5xx, and 401 on its own.
  std::atomic<uint64_t> answered_2xx_{0};
  std::atomic<uint64_t> answered_4xx_{0};
  std::atomic<uint64_t> answered_401_{0};
  std::atomic<uint64_t> answered_5xx_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> serving_ended_{false};
};

}  // namespace hvd::rendezvous
