#include "hvd/rendezvous/etcd_client.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "etcd_json.h"
#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;

Result<EtcdOptions> EtcdOptionsFromEnvironment(std::string_view endpoints) {
  namespace ev = common::env_vars;
  auto parsed = ParseEtcdEndpoints(endpoints);
  if (!parsed.ok()) return parsed.status();
  EtcdOptions options;
  options.endpoints = std::move(*parsed);
  const std::string user = common::GetEnvString(ev::kEtcdctlUser, "");
  const size_t colon = user.find(':');
  options.user = user.substr(0, colon);
  options.password = colon == std::string::npos
                         ? common::GetEnvString(ev::kEtcdctlPassword, "")
                         : user.substr(colon + 1);
  if (options.user.empty() && !options.password.empty()) {
    return Status::InvalidArgument(std::string(ev::kEtcdctlPassword) +
                                   " is set but " + ev::kEtcdctlUser +
                                   " names no user");
  }
  options.ca_file = common::GetEnvString(ev::kEtcdctlCacert, "");
  options.cert_file = common::GetEnvString(ev::kEtcdctlCert, "");
  options.key_file = common::GetEnvString(ev::kEtcdctlKey, "");
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument(
        std::string("a client certificate needs both ") + ev::kEtcdctlCert +
        " and " + ev::kEtcdctlKey);
  }
  return options;
}

std::string EtcdEndpoint::Url() const {
  return scheme + "://" + host + ":" + std::to_string(port);
}

Result<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view text) {
  std::vector<EtcdEndpoint> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(start, comma - start);
    start = comma + 1;
    const std::string shown(entry);
    EtcdEndpoint endpoint;
    for (const char* scheme : {"http", "https"}) {
      const std::string lead = std::string(scheme) + "://";
      if (entry.substr(0, lead.size()) == lead) {
        endpoint.scheme = scheme;
        entry.remove_prefix(lead.size());
      }
    }
    const size_t colon = entry.rfind(':');
    const std::string_view host =
        colon == std::string_view::npos ? entry : entry.substr(0, colon);
    bool host_ok = !host.empty();
    for (char c : host) {
      host_ok = host_ok && (std::isalnum(static_cast<unsigned char>(c)) ||
                            c == '.' || c == '-');
    }
    if (!host_ok) {
      return Status::InvalidArgument(
          "etcd endpoint '" + shown +
          "': expected HOST:PORT, e.g. etcd1:2379 or https://10.0.0.5:2379");
    }
    endpoint.host = std::string(host);
    if (colon != std::string_view::npos) {
      const std::string_view port = entry.substr(colon + 1);
      int value = 0;
      bool port_ok = !port.empty() && port.size() <= 5;
      for (char c : port) {
        port_ok = port_ok && std::isdigit(static_cast<unsigned char>(c));
        value = value * 10 + (c - '0');
      }
      if (!port_ok || value < 1 || value > 65535) {
        return Status::InvalidArgument("etcd endpoint '" + shown +
                                       "': the port must be 1 to 65535");
      }
      endpoint.port = value;
    }
    out.push_back(std::move(endpoint));
    if (comma == text.size()) break;
  }
  return out;
}

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {}

EtcdClient::~EtcdClient() = default;

std::unique_ptr<httplib::Client> EtcdClient::MakeClient(size_t endpoint) const {
  const EtcdEndpoint& e = options_.endpoints[endpoint];
  auto client = options_.cert_file.empty()
                    ? std::make_unique<httplib::Client>(e.Url())
                    : std::make_unique<httplib::Client>(
                          e.Url(), options_.cert_file, options_.key_file);
  if (!options_.ca_file.empty()) client->set_ca_cert_path(options_.ca_file);
  client->set_tcp_nodelay(true);
  client->set_connection_timeout(options_.connect_timeout);
  return client;
}

httplib::Client& EtcdClient::ClientFor(size_t endpoint) {
  auto& client = clients_[endpoint];
  if (client == nullptr) {
    client = MakeClient(endpoint);
    client->set_keep_alive(true);
  }
  return *client;
}

Result<std::string> EtcdClient::CallOnce(size_t endpoint,
                                         const std::string& path,
                                         const std::string& body,
                                         std::chrono::milliseconds left,
                                         bool* try_next) {
  *try_next = true;
  httplib::Client& client = ClientFor(endpoint);
  client.set_read_timeout(left);
  client.set_write_timeout(left);
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.set_header("Content-Type", "application/json");
  if (!token_.empty()) request.set_header("Authorization", token_);
  std::string answer;
  bool too_big = false;
  request.content_receiver = [&](const char* data, size_t length, uint64_t,
                                 uint64_t) {
    if (answer.size() + length > options_.max_response_bytes) {
      too_big = true;
      return false;
    }
    answer.append(data, length);
    return true;
  };
  httplib::Result result = client.send(request);
  const std::string where = options_.endpoints[endpoint].Url() + path;
  if (too_big) {
    *try_next = false;
    return Status::ResourceExhausted(
        "etcd's answer from " + where + " is larger than " +
        std::to_string(options_.max_response_bytes) + " bytes");
  }
  if (result && result->status == 200) {
    *try_next = false;
    return answer;
  }
  // etcd's gateway sends an error chunked, ending in a trailer field that
  // Debian's cpp-httplib (0.11) cannot read past: the request then fails,
  // but the body has arrived whole and says what the error is.
  auto error = etcd_json::ErrorOf(answer);
  if (!result && !error) {
    return Status::Transport("etcd at " + where + ": " +
                             httplib::to_string(result.error()));
  }
  if (!error) {
    return Status::Transport("etcd at " + where + " answered HTTP " +
                             std::to_string(result->status));
  }
  *try_next = etcd_json::TryAnotherMember(*error);
  return etcd_json::StatusOf(*error).WithContext(where);
}

Status EtcdClient::Authenticate(size_t endpoint,
                                std::chrono::milliseconds left) {
  token_.clear();
  bool try_next = false;
  auto answer = CallOnce(endpoint, "/v3/auth/authenticate",
                         etcd_json::AuthBody(options_.user, options_.password),
                         left, &try_next);
  if (!answer.ok()) return answer.status();
  auto token = etcd_json::TokenOf(*answer);
  if (!token.ok()) return token.status();
  token_ = std::move(*token);
  return Status::Ok();
}

Result<std::string> EtcdClient::Call(const std::string& path,
                                     const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.endpoints.empty()) {
    return Status::InvalidArgument("no etcd endpoint is configured");
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  Status last = Status::Timeout("no attempt");
  // Each endpoint once, from the last one that answered, then around again
  // while the deadline allows (a member may be electing a leader).
  const size_t members = options_.endpoints.size();
  bool renewed_token = false;
  for (size_t attempt = 0;; ++attempt) {
    // Every member failed the last round: back off before the next (a
    // refused connection fails at once; an election takes a while).
    if (attempt > 0 && attempt % members == 0) {
      const auto pause =
          std::min(std::chrono::milliseconds(
                       25 << std::min<size_t>(attempt / members, 4)),
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now()));
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    const size_t endpoint = (current_ + attempt) % members;
    if (!options_.user.empty() && token_.empty()) {
      Status authenticated = Authenticate(endpoint, left);
      if (!authenticated.ok()) {
        last = authenticated;
        if (authenticated.code() == common::Code::kTransport) continue;
        return authenticated.WithContext("authenticating to etcd as '" +
                                         options_.user + "'");
      }
    }
    bool try_next = false;
    auto answer = CallOnce(endpoint, path, body, left, &try_next);
    if (answer.ok()) {
      current_ = endpoint;
      return answer;
    }
    last = answer.status();
    // An expired token: authenticate again, once per call.
    if (answer.status().code() == common::Code::kUnauthenticated &&
        !options_.user.empty() && !renewed_token) {
      renewed_token = true;
      token_.clear();
      continue;
    }
    if (!try_next) return answer.status();
  }
  std::string endpoints;
  for (const EtcdEndpoint& e : options_.endpoints) {
    endpoints += (endpoints.empty() ? "" : ",") + e.Url();
  }
  return Status::Timeout(
      "etcd did not answer " + path + " within " +
      std::to_string(options_.deadline.count()) + " ms at any of " + endpoints +
      " (last: " + last.ToString() +
      "); is the etcd cluster up and does it have a quorum?");
}

Result<int64_t> EtcdClient::Put(const std::string& key,
                                const std::string& value, int64_t lease) {
  auto answer = Call("/v3/kv/put", etcd_json::PutBody(key, value, lease));
  if (!answer.ok()) return answer.status();
  return etcd_json::RevisionOf(*answer);
}

Result<std::vector<EtcdKeyValue>> EtcdClient::Range(const std::string& key,
                                                    bool prefix) {
  auto answer = Call("/v3/kv/range", etcd_json::RangeBody(key, prefix));
  if (!answer.ok()) return answer.status();
  return etcd_json::KeyValuesOf(*answer);
}

Result<int64_t> EtcdClient::Delete(const std::string& key, bool prefix) {
  auto answer = Call("/v3/kv/deleterange", etcd_json::DeleteBody(key, prefix));
  if (!answer.ok()) return answer.status();
  return etcd_json::DeletedOf(*answer);
}

Result<EtcdTxnResult> EtcdClient::Txn(const std::vector<EtcdCompare>& compare,
                                      const std::vector<EtcdOp>& success,
                                      const std::vector<EtcdOp>& failure) {
  auto answer =
      Call("/v3/kv/txn", etcd_json::TxnBody(compare, success, failure));
  if (!answer.ok()) return answer.status();
  return etcd_json::TxnResultOf(*answer);
}

Result<int64_t> EtcdClient::GrantLease(int64_t ttl) {
  auto answer = Call("/v3/lease/grant", etcd_json::LeaseGrantBody(ttl));
  if (!answer.ok()) return answer.status();
  return etcd_json::LeaseIdOf(*answer);
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  auto answer = Call("/v3/lease/keepalive", etcd_json::LeaseIdBody(lease));
  if (!answer.ok()) return answer.status();
  return etcd_json::KeepAliveTtlOf(*answer);
}

Status EtcdClient::RevokeLease(int64_t lease) {
  auto answer = Call("/v3/lease/revoke", etcd_json::LeaseIdBody(lease));
  return answer.status();
}

Status EtcdClient::Watch(
    const std::string& key, bool prefix, int64_t start_revision,
    std::chrono::milliseconds timeout,
    const std::function<bool(std::vector<EtcdKeyValue>)>& on_puts) {
  size_t endpoint = 0;
  std::string token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (options_.endpoints.empty()) {
      return Status::InvalidArgument("no etcd endpoint is configured");
    }
    endpoint = current_;
    token = token_;
  }
  if (!options_.user.empty() && token.empty()) {
    return Status::Unauthenticated("watching etcd: not authenticated yet");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Not the kept-alive connection of the calls: a watch ends by closing
  // its own.
  std::unique_ptr<httplib::Client> client = MakeClient(endpoint);
  client->set_read_timeout(timeout);
  client->set_write_timeout(timeout);
  httplib::Request request;
  request.method = "POST";
  request.path = "/v3/watch";
  request.body = etcd_json::WatchBody(key, prefix, start_revision);
  request.set_header("Content-Type", "application/json");
  if (!token.empty()) request.set_header("Authorization", token);
  std::string pending;  // a message not yet ended by its newline
  bool done = false;
  Status failed;
  request.content_receiver = [&](const char* data, size_t length, uint64_t,
                                 uint64_t) {
    pending.append(data, length);
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      auto message =
          etcd_json::WatchMessageOf(std::string_view(pending.data(), end));
      pending.erase(0, end + 1);
      if (!message.ok()) {
        failed = message.status();
        return false;
      }
      if (message->canceled) {
        failed = message->compact_revision > 0
                     ? Status::NotFound(
                           "revision " + std::to_string(start_revision) +
                           " is compacted (etcd keeps from " +
                           std::to_string(message->compact_revision) + ")")
                     : Status::Transport("etcd ended the watch: " +
                                         message->cancel_reason);
        return false;
      }
      if (!message->puts.empty() && !on_puts(std::move(message->puts))) {
        done = true;
        return false;
      }
    }
    if (pending.size() > options_.max_response_bytes) {
      failed = Status::ResourceExhausted(
          "a message of etcd's watch is larger than " +
          std::to_string(options_.max_response_bytes) + " bytes");
      return false;
    }
    return std::chrono::steady_clock::now() < deadline;
  };
  httplib::Result result = client->send(request);
  const std::string where =
      "etcd's watch of " + key + " at " + options_.endpoints[endpoint].Url();
  if (done) return Status::Ok();
  if (!failed.ok()) return failed.WithContext(where);
  if (std::chrono::steady_clock::now() >= deadline) {
    return Status::Timeout(where + ": nothing new within " +
                           std::to_string(timeout.count()) + " ms");
  }
  return Status::Transport(where + " ended: " +
                           (result ? "HTTP " + std::to_string(result->status)
                                   : httplib::to_string(result.error())));
}

}  // namespace hvd::rendezvous
