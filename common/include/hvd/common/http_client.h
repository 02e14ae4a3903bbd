// HttpClient: signed HTTP requests to one hvd server (rendezvous or
// notification) with timeouts and bounded retries.
//
// Every request is signed with the job secret or a worker's own key (see
// hmac.h and worker_key.h). Transport
// failures (refused, reset, timed out) and 503 answers are retried with
// exponential backoff and jitter up to `max_attempts`; every other answer,
// including 4xx, is returned to the caller as it came. All requests the
// servers accept are idempotent, which is what makes the retry safe.
//
// Thread-safe. Requests on one client go one at a time over one kept-alive
// connection; use one client per thread for parallelism.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hvd/common/status.h"
#include "hvd/common/worker_key.h"

namespace httplib {
class Client;
}

namespace hvd::common {

struct HttpClientOptions {
  std::string host;
  int port = 0;
  // The key that signs each request: the job secret (hvdrun's own
  // clients), or the key of `worker` when that is set. Required.
  std::string secret;
  // Set in a worker: every request names it (X-Hvd-Worker), and `secret`
  // is WorkerKey(job secret, *worker).
  std::optional<WorkerIdentity> worker;
  std::chrono::milliseconds connect_timeout{5000};
  // Time allowed for the answer to one attempt, on top of any long-poll wait
  // the caller announces per request.
  std::chrono::milliseconds read_timeout{30000};
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{1000};
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends METHOD target (path and query, already URL-safe) with `body`.
  // `long_poll` is how long the server may hold the request before
  // answering; it is added to the read timeout. A transport failure after
  // the last attempt is kTransport (kTimeout if the last attempt timed out),
  // with a message naming method, URL, cause and attempts.
  Result<HttpResponse> Send(
      const std::string& method, const std::string& target,
      const std::string& body = std::string(),
      std::chrono::milliseconds long_poll = std::chrono::milliseconds(0));

  // "http://host:port" + target, for messages.
  std::string Url(const std::string& target) const;

  const HttpClientOptions& options() const { return options_; }

 private:
  const HttpClientOptions options_;
  std::mutex mu_;  // one request at a time on client_
  std::unique_ptr<httplib::Client> client_;
};

// A short text for an HTTP status code ("404 Not Found").
std::string HttpStatusText(int status);

}  // namespace hvd::common
