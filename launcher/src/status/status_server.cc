#include "status/status_server.h"

#include "hvd/common/hmac.h"
#include "hvd/common/network_interfaces.h"
#include "hvd/common/secret_file.h"
#include "status/status_page.h"

namespace hvd::launcher {

using common::HttpAnswer;
using common::Status;

namespace {

// The page runs its own inline script and talks to this server only; it
// may not be framed, and the token stays out of referrers.
const std::vector<std::pair<std::string, std::string>> kPageHeaders = {
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'unsafe-inline'; style-src "
     "'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; "
     "form-action 'none'; frame-ancestors 'none'"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Content-Type-Options", "nosniff"},
    {"Cache-Control", "no-store"}};

std::string Dump(const nlohmann::json& value) {
  // Output tails may hold any bytes: never throw on them.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// An answer of `type` with `body` and further header fields.
HttpAnswer Answer(int status, const char* type, std::string body,
                  std::vector<std::pair<std::string, std::string>> headers) {
  HttpAnswer answer;
  answer.status = status;
  answer.content_type = type;
  answer.body = std::move(body);
  answer.headers = std::move(headers);
  return answer;
}

}  // namespace

common::Result<std::string> StatusTokenFrom(const std::string& path) {
  common::SecretFileRules rules;
  rules.flag = "--status-token-file";
  rules.noun = "token";
  return common::SecretFromFile(path, rules);
}

std::string StatusTokenFromJobSecret(const std::string& secret) {
  // A label no other HMAC under the secret uses: a seal's message starts
  // "hvd etcd store\n", a request's signature covers a method, a target, a
  // time, a nonce and a digest, each line ended by '\n'.
  return common::HmacSha256Hex(secret, "hvd status page read token");
}

const nlohmann::json& StatusField(const nlohmann::json& object,
                                  const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

StatusServer::StatusServer(StatusServerOptions options, Source source)
    : options_(std::move(options)),
      starting_(std::make_shared<const nlohmann::json>(
          nlohmann::json{{"job", {{"state", "starting"}}},
                         {"hosts", nlohmann::json::array()},
                         {"ranks", nlohmann::json::array()},
                         {"generations", nlohmann::json::array()},
                         {"failures", nlohmann::json::array()},
                         {"recoveries", nlohmann::json::array()},
                         {"messages", nlohmann::json::array()}})),
      source_(std::move(source)) {}

StatusServer::~StatusServer() { Stop(); }

common::Result<std::unique_ptr<StatusServer>> StatusServer::Start(
    StatusServerOptions options, Source source) {
  std::unique_ptr<StatusServer> server(
      new StatusServer(std::move(options), std::move(source)));
  common::HttpServerOptions http;
  http.name = "status server";
  http.bind_host = server->options_.bind_host;
  http.port = server->options_.port;
  http.access = common::HttpAccess::kReadToken;
  http.read_token = server->options_.token;
  http.handler_threads = 2;
  // Readers are few: a browser tab, a scraper, `hvdrun status`.
  http.limits.max_connections = 256;
  http.limits.max_unauthenticated = 64;
  http.limits.max_unauthenticated_per_peer = 16;
  http.limits.body_bytes = 0;
  http.limits.authenticated_idle = std::chrono::seconds(60);
  StatusServer* self = server.get();
  auto started = common::SignedHttpServer::Start(
      std::move(http),
      [self](const common::HttpRequest& req) { return self->Route(req); });
  if (!started.ok()) {
    return Status::InvalidArgument("--status-bind " +
                                   server->options_.bind_host + ":" +
                                   std::to_string(server->options_.port) +
                                   ": " + started.status().message());
  }
  server->http_ = std::move(*started);
  return server;
}

std::string StatusServer::url() const {
  return base_url() + "/?token=" + options_.token;
}

std::string StatusServer::base_url() const {
  std::string host = options_.bind_host;
  if (host == "0.0.0.0" || host == "::") {
    const std::string name = common::ThisHostName();
    if (!name.empty()) host = name;
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  return "http://" + host + ":" + std::to_string(port());
}

void StatusServer::Follow(StandbyView view) {
  auto shared = std::make_shared<const StandbyView>(std::move(view));
  std::lock_guard<std::mutex> lock(mode_mu_);
  standby_ = std::move(shared);
}

void StatusServer::Lead(Source source) {
  std::lock_guard<std::mutex> lock(mode_mu_);
  source_ = std::move(source);
  standby_.reset();
}

HttpAnswer StatusServer::StandbyRoute(const StandbyView& view,
                                      const common::HttpRequest& request) {
  const int64_t now = common::WallClockMs();
  if (request.path == "/metrics") {
    return Answer(200, "text/plain; version=0.0.4; charset=utf-8",
                  StandbyMetricsText(view), {{"Cache-Control", "no-store"}});
  }
  const bool page = request.path == "/" || request.path == "/index.html";
  if (!page && request.path != "/status.json") {
    return HttpAnswer::Error(
        Status::NotFound("no page " + common::Printable(request.path) +
                         " here: try /, /status.json or /metrics"));
  }
  // The leader changes: nothing of this answer may be kept.
  auto location = RedirectLocation(view, request.path, request.target);
  if (location) {
    // The body says where to and why, for a reader that does not follow.
    return Answer(307, "application/json", Dump(StandbyJson(view, now)),
                  {{"Location", *location}, {"Cache-Control", "no-store"}});
  }
  if (page) {
    return Answer(200, "text/html; charset=utf-8", StandbyPageHtml(view, now),
                  kPageHeaders);
  }
  HttpAnswer answer = HttpAnswer::Json(Dump(StandbyJson(view, now)));
  answer.headers = {{"Cache-Control", "no-store"}};
  return answer;
}

HttpAnswer StatusServer::Route(const common::HttpRequest& request) {
  Source source;
  std::shared_ptr<const StandbyView> standby;
  {
    std::lock_guard<std::mutex> lock(mode_mu_);
    source = source_;
    standby = standby_;
  }
  if (standby) return StandbyRoute(*standby, request);
  if (request.path == "/" || request.path == "/index.html") {
    return Answer(200, "text/html; charset=utf-8", StatusPageHtml(),
                  kPageHeaders);
  }
  if (request.path == "/status.json") {
    HttpAnswer answer = HttpAnswer::Json(Rendered(source, false));
    answer.headers = {{"Cache-Control", "no-store"}};
    return answer;
  }
  if (request.path == "/metrics") {
    return Answer(200, "text/plain; version=0.0.4; charset=utf-8",
                  Rendered(source, true), {{"Cache-Control", "no-store"}});
  }
  return HttpAnswer::Error(
      Status::NotFound("no page " + common::Printable(request.path) +
                       " here: try /, /status.json or /metrics"));
}

std::string StatusServer::Rendered(const Source& source, bool metrics) {
  std::shared_ptr<const nlohmann::json> status = source ? source() : nullptr;
  if (!status) status = starting_;
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cached_for_[metrics] != status) {
    cached_[metrics] = metrics ? MetricsText(*status) : Dump(*status);
    cached_for_[metrics] = std::move(status);
  }
  return cached_[metrics];
}

void StatusServer::Stop() {
  if (http_) http_->Stop();
}

}  // namespace hvd::launcher
