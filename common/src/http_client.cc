#include "hvd/common/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <random>
#include <thread>

#include "hvd/common/hmac.h"

namespace hvd::common {
namespace {

std::chrono::milliseconds Backoff(const HttpClientOptions& options,
                                  int attempt) {
  // Full jitter: uniform in [0, min(max, initial * 2^attempt)], so that many
  // workers retrying against one server do not stampede in step.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t cap = options.initial_backoff.count() << std::min(attempt, 20);
  cap = std::min<int64_t>(cap, options.max_backoff.count());
  std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(cap, 1));
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)),
      client_(std::make_unique<httplib::Client>(options_.host, options_.port)) {
  client_->set_keep_alive(true);
  client_->set_tcp_nodelay(true);
  client_->set_url_encode(false);
  client_->set_connection_timeout(options_.connect_timeout);
}

HttpClient::~HttpClient() = default;

std::string HttpClient::Url(const std::string& target) const {
  return "http://" + options_.host + ":" + std::to_string(options_.port) +
         target;
}

Result<HttpResponse> HttpClient::Send(const std::string& method,
                                      const std::string& target,
                                      const std::string& body,
                                      std::chrono::milliseconds long_poll) {
  std::lock_guard<std::mutex> lock(mu_);
  client_->set_read_timeout(options_.read_timeout + long_poll);
  auto started = std::chrono::steady_clock::now();
  std::string last_error;
  bool last_was_timeout = false;
  const int attempts = std::max(1, options_.max_attempts);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(Backoff(options_, attempt));
    // Every attempt is a new request to the server: a fresh nonce (a
    // repeated one is refused as a replay) and the current time.
    auto signature =
        SignNewRequest(options_.secret, method, target, body, WallClockMs());
    if (!signature.ok()) return signature.status();
    httplib::Request request;
    request.method = method;
    request.path = target;
    request.body = body;
    for (const auto& [name, value] : signature->Fields()) {
      request.set_header(name, value);
    }
    if (options_.worker) {
      request.set_header(kWorkerHeader, options_.worker->Header());
    }
    if (!body.empty() || method == "PUT" || method == "POST") {
      request.set_header("Content-Type", "application/octet-stream");
    }
    auto attempt_started = std::chrono::steady_clock::now();
    httplib::Result result = client_->send(request);
    if (result && result->status != 503) {
      return HttpResponse{result->status, std::move(result->body)};
    }
    if (result) {
      last_error = "server answered 503 (" + result->body + ")";
      last_was_timeout = false;
    } else {
      last_error = httplib::to_string(result.error());
      // httplib reports a read timeout as a plain read error; tell them
      // apart by how long the attempt took.
      last_was_timeout = result.error() == httplib::Error::ConnectionTimeout ||
                         (result.error() == httplib::Error::Read &&
                          std::chrono::steady_clock::now() - attempt_started >=
                              options_.read_timeout + long_poll);
    }
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  std::string message = method + " " + Url(target) + " failed: " + last_error +
                        " (" + std::to_string(attempts) + " attempts over " +
                        std::to_string(elapsed.count()) +
                        " ms; is the hvdrun driver still running?)";
  return last_was_timeout ? Status::Timeout(message)
                          : Status::Transport(message);
}

std::string HttpStatusText(int status) {
  const char* text = "";
  switch (status) {
    case 200:
      text = "OK";
      break;
    case 400:
      text = "Bad Request";
      break;
    case 401:
      text = "Unauthorized";
      break;
    case 404:
      text = "Not Found";
      break;
    case 405:
      text = "Method Not Allowed";
      break;
    case 408:
      text = "Request Timeout";
      break;
    case 413:
      text = "Payload Too Large";
      break;
    case 500:
      text = "Internal Server Error";
      break;
    case 503:
      text = "Service Unavailable";
      break;
  }
  return std::to_string(status) + (*text ? " " : "") + text;
}

}  // namespace hvd::common
