#include "hvd/common/http_server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <exception>
#include <future>

#include "http_connection.h"
#include "http_server_impl.h"

namespace hvd::common {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Raises the soft open-file limit to the hard one and returns the soft
// limit now in force. Process-wide, but only ever upwards, and every hvd
// process that serves wants it: a default soft limit of 1024 would cap a
// server at a few hundred connections.
uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
}

AdmissionLimits AdmissionFor(const HttpServerLimits& limits,
                             uint64_t open_files) {
  AdmissionLimits admission;
  // Leave a quarter of the descriptors to the rest of the process.
  uint64_t fit = std::max<uint64_t>(open_files / 4 * 3, 16);
  admission.max_connections =
      static_cast<size_t>(std::min<uint64_t>(limits.max_connections, fit));
  admission.max_unauthenticated = limits.max_unauthenticated;
  admission.max_unauthenticated_per_peer = limits.max_unauthenticated_per_peer;
  return admission;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SignedHttpServer::Impl::Impl(HttpServerOptions options, Handler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      logger_(spdlog::default_logger()),
      table_(AdmissionFor(options_.limits, RaiseOpenFileLimit())),
      replay_(options_.auth_window, options_.limits.replay_memory),
      refusals_(options_.name, options_.limits.refusal_log_interval.count()),
      bodies_(options_.limits.body_budget_bytes, options_.limits.body_bytes),
      pool_(std::max<size_t>(options_.handler_threads, 1)) {}

SignedHttpServer::Impl::~Impl() { Stop(); }

Status SignedHttpServer::Impl::Listen() {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints =
      resolver.resolve(options_.bind_host, std::to_string(options_.port), ec);
  std::string why = ec ? ec.message() : "no address";
  for (const auto& entry : endpoints) {
    boost::system::error_code bind_ec;
    acceptor_.open(entry.endpoint().protocol(), bind_ec);
    if (!bind_ec) acceptor_.set_option(tcp::acceptor::reuse_address(true));
    if (!bind_ec) acceptor_.bind(entry.endpoint(), bind_ec);
    // A thousand workers connecting at once must not overflow the backlog
    // (each overflow costs the client a 1 s SYN retransmit).
    if (!bind_ec)
      acceptor_.listen(asio::socket_base::max_listen_connections, bind_ec);
    if (!bind_ec) break;
    why = bind_ec.message();
    acceptor_.close(bind_ec);
  }
  if (!acceptor_.is_open()) {
    return Status::InvalidArgument(options_.name + " cannot listen on " +
                                   options_.bind_host + ":" +
                                   std::to_string(options_.port) + " (" + why +
                                   "; address not local, or port in use?)");
  }
  port_ = acceptor_.local_endpoint().port();
  Accept();
  ScheduleSummary();
  io_thread_ = std::thread([this] {
    // Connection code catches what it expects; anything else (an
    // allocation that fails) is logged and the loop goes on.
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        logger_->error("{}: I/O thread caught '{}'; serving on", options_.name,
                       e.what());
      }
    }
  });
  logger_->info("{}: serving on {}:{} with {} handler threads", options_.name,
                options_.bind_host, port_, options_.handler_threads);
  return Status::Ok();
}

void SignedHttpServer::Impl::RunOnIo(std::function<void()> task) {
  std::promise<void> done;
  asio::post(io_, [&] {
    task();
    done.set_value();
  });
  done.get_future().wait();
}

void SignedHttpServer::Impl::Stop() {
  if (stopped_.exchange(true)) return;
  if (!io_thread_.joinable()) {
    pool_.join();
    return;
  }
  // New requests get 503 from here on; no handler is started any more.
  RunOnIo([this] {
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_timer_.cancel();
  });
  // Handlers that block were woken by the owner (see http_server.h).
  pool_.join();
  RunOnIo([this] {
    summary_timer_.cancel();
    LogSummary(/*flush=*/true);
    auto connections = connections_;
    for (auto& [id, weak] : connections) {
      if (auto connection = weak.lock()) connection->Shutdown();
    }
  });
  work_.reset();
  io_thread_.join();
}

HttpServerCounters SignedHttpServer::Impl::counters() const {
  HttpServerCounters c;
  c.total = total_;
  c.ok_2xx = ok_2xx_;
  c.client_4xx = client_4xx_;
  c.unauthenticated_401 = unauthenticated_401_;
  c.server_5xx = server_5xx_;
  c.dropped_connections = dropped_;
  for (size_t i = 0; i < kHandlerSecondsBuckets; ++i) {
    c.handler_seconds[i] = handler_buckets_[i].load(std::memory_order_relaxed);
  }
  c.handler_seconds_sum = static_cast<double>(handler_micros_) / 1e6;
  return c;
}

void SignedHttpServer::Impl::Accept() {
  acceptor_.async_accept(
      io_, [this](boost::system::error_code ec, tcp::socket socket) {
        OnAccept(ec, std::move(socket));
      });
}

void SignedHttpServer::Impl::OnAccept(boost::system::error_code ec,
                                      tcp::socket socket) {
  if (stopping_ || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors (or another accept error): make room, and pause
    // rather than spin on an error that repeats at once.
    if (ec == asio::error::no_descriptors && table_.unauthenticated() > 0) {
      auto admission = table_.EvictOldestUnauthenticated();
      if (admission) Evict(*admission, "dropped: out of file descriptors");
    }
    Dropped("-", "accept failed: " + ec.message());
    accept_retry_timer_.expires_after(50ms);
    accept_retry_timer_.async_wait([this](boost::system::error_code wait_ec) {
      if (!wait_ec && !stopping_) Accept();
    });
    return;
  }
  boost::system::error_code peer_ec;
  tcp::endpoint remote = socket.remote_endpoint(peer_ec);
  if (peer_ec) return Accept();  // gone already; the socket closes here
  socket.set_option(tcp::no_delay(true), peer_ec);
  const std::string address = remote.address().to_string();
  const std::string peer = address + ":" + std::to_string(remote.port());
  ConnectionTable::Admission admission = table_.Admit(address);
  for (ConnectionTable::Id evicted : admission.evicted) {
    Evict(evicted,
          "dropped (unauthenticated, oldest) to admit a newer connection");
  }
  if (!admission.admitted) {
    Dropped(peer,
            "refused: " + std::to_string(table_.limits().max_connections) +
                " authenticated connections already open");
  } else {
    auto connection = std::make_shared<Connection>(*this, std::move(socket),
                                                   admission.id, peer);
    connections_.emplace(admission.id, connection);
    connection->Start();
  }
  Accept();
}

void SignedHttpServer::Impl::Evict(ConnectionTable::Id id,
                                   const std::string& reason) {
  auto found = connections_.find(id);
  if (found == connections_.end()) return;
  if (auto connection = found->second.lock()) {
    Dropped(connection->peer(), reason);
    connection->Close();
  }
  connections_.erase(id);
}

Status SignedHttpServer::Impl::AdmitNonce(std::string_view nonce,
                                          int64_t timestamp_ms,
                                          int64_t now_ms) {
  return replay_.Admit(nonce, timestamp_ms, now_ms);
}

void SignedHttpServer::Impl::MarkAuthenticated(ConnectionTable::Id id) {
  table_.Authenticate(id);
}

void SignedHttpServer::Impl::Forget(ConnectionTable::Id id) {
  table_.Remove(id);
  connections_.erase(id);
}

void SignedHttpServer::Impl::Refused(int http_status, const std::string& peer,
                                     const std::string& reason) {
  refusals_.Refused(http_status, peer, reason);
  LogSummary();
}

void SignedHttpServer::Impl::Dropped(const std::string& peer,
                                     const std::string& reason) {
  ++dropped_;
  refusals_.Dropped(peer, reason);
  LogSummary();
}

void SignedHttpServer::Impl::CountAnswer(int http_status) {
  ++total_;
  if (http_status == 401) ++unauthenticated_401_;
  if (http_status >= 500) {
    ++server_5xx_;
  } else if (http_status >= 400) {
    ++client_4xx_;
  } else {
    ++ok_2xx_;
  }
}

void SignedHttpServer::Impl::LogSummary(bool flush) {
  if (auto line = refusals_.TakeSummary(SteadyMs(), flush)) {
    logger_->warn("{}", *line);
  }
}

void SignedHttpServer::Impl::ScheduleSummary() {
  summary_timer_.expires_after(options_.limits.refusal_log_interval);
  summary_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    LogSummary();
    ScheduleSummary();
  });
}

void SignedHttpServer::Impl::CountHandlerTime(
    std::chrono::steady_clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  size_t bucket = 0;
  while (bucket < std::size(kHandlerSecondsBounds) &&
         seconds > kHandlerSecondsBounds[bucket]) {
    ++bucket;
  }
  handler_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  handler_micros_.fetch_add(
      std::chrono::duration_cast<std::chrono::microseconds>(took).count(),
      std::memory_order_relaxed);
}

std::optional<HandledRequest> SignedHttpServer::Impl::Prepare(
    HttpRequest& request, const std::string& body_digest) {
  HandledRequest refused;
  Status body = options_.access == HttpAccess::kReadToken
                    ? Status::Ok()  // read requests have no body
                    : VerifyBody(body_digest, request.body);
  if (!body.ok()) {
    refused.answer = HttpAnswer::Error(401, body);
    refused.refusal = body.message();
    return refused;
  }
  auto target = ParseTarget(request.target);
  if (!target.ok()) {
    refused.answer = HttpAnswer::Error(400, target.status());
    return refused;
  }
  request.path = std::move(target->path);
  request.params = std::move(target->params);
  return std::nullopt;
}

bool SignedHttpServer::Impl::RunsInline(const HttpRequest& request) const {
  return options_.never_blocks && request.body.size() <= kInlineBodyBytes &&
         options_.never_blocks(request);
}

HandledRequest SignedHttpServer::Impl::Run(const HttpRequest& request) {
  HandledRequest handled;
  std::string what;
  try {
    const auto started = std::chrono::steady_clock::now();
    handled.answer = handler_(request);
    CountHandlerTime(std::chrono::steady_clock::now() - started);
    return handled;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  logger_->error("{}: handler for {} {} threw: {}", options_.name,
                 request.method, Printable(request.path), what);
  handled.answer = HttpAnswer::Error(
      500, Status::Internal("the handler failed: " + Printable(what)));
  return handled;
}

// ---- SignedHttpServer ------------------------------------------------------

SignedHttpServer::SignedHttpServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

SignedHttpServer::~SignedHttpServer() = default;

Result<std::unique_ptr<SignedHttpServer>> SignedHttpServer::Start(
    HttpServerOptions options, Handler handler) {
  if (options.access == HttpAccess::kSigned && options.secret.empty()) {
    return Status::InvalidArgument(options.name +
                                   " needs a job secret to check signatures");
  }
  if (options.access == HttpAccess::kReadToken &&
      options.read_token.size() < 16) {
    return Status::InvalidArgument(options.name +
                                   " needs a read token of 16 bytes or more");
  }
  if (!handler) {
    return Status::InvalidArgument(options.name + " needs a handler");
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  Status status = impl->Listen();
  if (!status.ok()) return status;
  return std::unique_ptr<SignedHttpServer>(
      new SignedHttpServer(std::move(impl)));
}

int SignedHttpServer::port() const { return impl_->port(); }

HttpServerCounters SignedHttpServer::counters() const {
  return impl_->counters();
}

void SignedHttpServer::Stop() { impl_->Stop(); }

}  // namespace hvd::common
