// SignedHttpServer: the HTTP/1.1 server core of every hvd control-plane
// server (the driver's rendezvous server, each worker's notification
// server, and hvdrun's read-only status server), built so that clients
// without the job secret cannot stall it or grow its memory. See
// docs/design.md, "Control-plane servers".
//
// Access is one of two kinds (HttpAccess). kSigned: every request is signed
// with the server's key (below): the job secret, or with `worker_keys` a
// worker's own key derived from it (worker_key.h). kReadToken, for the status
// page: only GET requests without a body, each carrying the read token as
// `?token=` or `Authorization: Bearer`; everything else is refused before the
// handler (405 for another method, 401 without the token).
//
// Threads: one I/O thread runs every socket operation, event-driven (an idle
// connection costs a file descriptor and a small buffer, no thread); a
// bounded pool of handler threads runs the handler, and only for complete
// requests whose signature is valid. A request goes through:
//   1. admission: per-peer and total bounds on unauthenticated connections;
//      the oldest unauthenticated one is dropped to make room;
//   2. request line and headers, within `header_deadline` of their first
//      byte and `header_bytes`/`header_fields`;
//   3. the signature check from the headers alone (hmac.h) and the nonce
//      check (replay): 401 and close, before any body byte is read;
//   4. Content-Length over `body_bytes`: 413 and close, without reading it;
//      a body that would take the bodies held at once past
//      `body_budget_bytes`: 503 and close, without reading it;
//   5. the body, within `body_deadline`; its digest must match the signed
//      one (401 otherwise);
//   6. the handler, on the pool, or on the I/O thread for a request that
//      `never_blocks` names (which saves two thread hand-offs); its answer
//      is written back by the I/O thread within `write_deadline`.
// Malformed bytes anywhere are 400; nothing a client sends reaches a
// handler unauthenticated or ends the process. Refusals are counted and
// logged as one summary line per `refusal_log_interval` at most, to the
// spdlog default logger of the time Start() ran (held, so that a server
// destroyed while the process exits can still log).
//
// Start() returns a running server. Stop() (or the destructor) refuses new
// requests with 503, waits for running handlers (the owner must first wake
// any handler that blocks, e.g. long-polls), then closes every connection.
// All methods are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>

#include "hvd/common/http_message.h"
#include "hvd/common/status.h"

namespace hvd::common {

struct HttpServerLimits {
  // Request line plus header fields, in bytes and in fields.
  uint32_t header_bytes = 16 * 1024;
  size_t header_fields = 64;
  size_t body_bytes = 1 << 20;
  // Request bodies held in memory at once over all connections, from the
  // signature check to the end of their handler (body_budget.h); a request
  // past it is refused with 503 (retried). Never below body_bytes.
  size_t body_budget_bytes = 32u << 20;
  // From the first byte of a request to the end of its headers (a total
  // deadline, so a client that dribbles a byte a second is still cut).
  std::chrono::milliseconds header_deadline{5000};
  // From the end of the headers to the end of the body.
  std::chrono::milliseconds body_deadline{30000};
  std::chrono::milliseconds write_deadline{30000};
  // How long a connection may wait for its next request: briefly before it
  // has sent one signed request, long after (a worker keeps one connection
  // for a whole rendezvous).
  std::chrono::milliseconds unauthenticated_idle{2000};
  std::chrono::milliseconds authenticated_idle{300000};
  // Connection admission (see connection_table.h). The total is also capped
  // at three quarters of the open-file limit.
  size_t max_connections = 8192;
  size_t max_unauthenticated = 1024;
  size_t max_unauthenticated_per_peer = 256;
  // Nonces remembered against replay (about 40 bytes each).
  size_t replay_memory = 1 << 20;
  std::chrono::milliseconds refusal_log_interval{10000};
};

enum class HttpAccess { kSigned, kReadToken };

struct HttpServerOptions {
  std::string name;  // starts log lines: "rendezvous", "notification server"
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port, reported by port()
  HttpAccess access = HttpAccess::kSigned;
  std::string secret;  // required with kSigned
  // kSigned: also take requests signed with a worker's own key, derived
  // from `secret` by their X-Hvd-Worker field (worker_key.h); the handler
  // sees who in HttpRequest::worker. Off, such a request is refused (401).
  bool worker_keys = false;
  std::string read_token;  // required with kReadToken
  // Accepted distance between a request's timestamp and this clock.
  std::chrono::milliseconds auth_window{60000};
  // Handler threads: the most requests handled at once. A handler that
  // blocks (a long-poll) holds one for its wait.
  size_t handler_threads = 4;
  // Requests (target parsed) whose handler answers at once, without
  // waiting on anything: they run on the I/O thread when their body is
  // small (kInlineBodyBytes). Unset: every request runs on the pool.
  std::function<bool(const HttpRequest&)> never_blocks;
  HttpServerLimits limits;
};

// The largest body a `never_blocks` request may have to run on the I/O
// thread; a larger one's digest is checked on the pool.
inline constexpr size_t kInlineBodyBytes = 64 * 1024;

// Upper bounds, in seconds, of the handler-time histogram's buckets; one
// more bucket takes the rest.
inline constexpr double kHandlerSecondsBounds[] = {0.001, 0.005, 0.025, 0.1,
                                                   0.5,   2.5,   10,    60};
inline constexpr size_t kHandlerSecondsBuckets =
    std::size(kHandlerSecondsBounds) + 1;

// Counts of answers written, by class; refusals by the core are included.
struct HttpServerCounters {
  uint64_t total = 0;
  uint64_t ok_2xx = 0;
  uint64_t client_4xx = 0;
  uint64_t unauthenticated_401 = 0;
  uint64_t server_5xx = 0;
  uint64_t dropped_connections = 0;
  // How long handlers took (long-poll waits included), per bucket (not
  // cumulative), and their sum in seconds.
  std::array<uint64_t, kHandlerSecondsBuckets> handler_seconds{};
  double handler_seconds_sum = 0;
};

class SignedHttpServer {
 public:
  // Runs on a handler thread for every authenticated request; may block,
  // except for the requests `never_blocks` names. An exception becomes a
  // 500 answer (and an error log line naming it).
  using Handler = std::function<HttpAnswer(const HttpRequest&)>;

  // Binds, raises the soft open-file limit to the hard one (so hundreds of
  // connections fit), starts the threads and returns once it accepts.
  static Result<std::unique_ptr<SignedHttpServer>> Start(
      HttpServerOptions options, Handler handler);

  ~SignedHttpServer();
  SignedHttpServer(const SignedHttpServer&) = delete;
  SignedHttpServer& operator=(const SignedHttpServer&) = delete;

  int port() const;
  HttpServerCounters counters() const;
  void Stop();

  class Impl;

 private:
  explicit SignedHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::common
