// EtcdClient: etcd's v3 API (keys, transactions, leases) through the JSON
// gateway that every etcd member serves on its client port
// (docs/design.md, "rendezvous/: etcd", says why not gRPC). The base of
// the etcd rendezvous backend of issue 32 (hvdrun, EtcdStore).
//
// A call goes to the member that answered last, and moves on to the next
// endpoint when one cannot be reached or answers that it is unavailable,
// within one deadline for the whole call. etcd's own user and password
// authentication and TLS (a CA, and a client certificate where the cluster
// asks for one) are used when configured. Every answer is bounded in size.
//
// Thread-safe: calls go one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"

namespace httplib {
class Client;
}

namespace hvd::rendezvous {

struct EtcdEndpoint {
  std::string scheme = "http";  // or "https"
  std::string host;
  int port = 2379;

  std::string Url() const;
};

// "HOST:PORT[,HOST:PORT...]", each optionally with http:// or https://
// (torchrun's --rdzv-endpoint). kInvalidArgument naming the bad entry.
common::Result<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(
    std::string_view text);

struct EtcdOptions {
  std::vector<EtcdEndpoint> endpoints;
  std::chrono::milliseconds connect_timeout{1000};
  // For a whole call, across endpoints.
  std::chrono::milliseconds deadline{5000};
  // etcd's authentication, when the cluster has it on.
  std::string user;
  std::string password;
  // TLS for https endpoints: the CA that signed the members' certificates,
  // and this client's certificate and key where the cluster asks for one.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // The largest answer taken (a range over a prefix grows with the job).
  size_t max_response_bytes = size_t{16} << 20;
};

// Options for the members of `endpoints` (ParseEtcdEndpoints), with etcd's
// credentials from the environment as etcdctl reads them: ETCDCTL_USER
// ("name" or "name:password"), ETCDCTL_PASSWORD, ETCDCTL_CACERT,
// ETCDCTL_CERT and ETCDCTL_KEY (common/env_vars.h). hvdrun and its
// workers both start here, so they reach etcd alike.
common::Result<EtcdOptions> EtcdOptionsFromEnvironment(
    std::string_view endpoints);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// One condition of a transaction on a key, as etcd's Compare.
struct EtcdCompare {
  enum class Target { kCreateRevision, kModRevision, kVersion, kValue };
  enum class Result { kEqual, kNotEqual, kGreater, kLess };
  std::string key;
  Target target = Target::kCreateRevision;
  Result result = Result::kEqual;
  int64_t number = 0;  // for the revisions and the version
  std::string value;   // for kValue
};

// One operation of a transaction: a put, a range read or a delete.
struct EtcdOp {
  enum class Kind { kPut, kRange, kDelete };
  Kind kind = Kind::kRange;
  std::string key;
  std::string value;    // kPut
  int64_t lease = 0;    // kPut
  bool prefix = false;  // kRange, kDelete: every key starting with `key`
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
  // One entry per operation of the branch that ran: a range's keys, empty
  // for a put or a delete.
  std::vector<std::vector<EtcdKeyValue>> ranges;
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Returns the store's revision after the write.
  common::Result<int64_t> Put(const std::string& key, const std::string& value,
                              int64_t lease = 0);
  // The key, or every key with the prefix, in key order.
  common::Result<std::vector<EtcdKeyValue>> Range(const std::string& key,
                                                  bool prefix = false);
  // Returns how many keys were deleted.
  common::Result<int64_t> Delete(const std::string& key, bool prefix = false);
  common::Result<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compare,
                                    const std::vector<EtcdOp>& success,
                                    const std::vector<EtcdOp>& failure);
  // A lease of `ttl` seconds; returns its id.
  common::Result<int64_t> GrantLease(int64_t ttl);
  // Renews the lease; returns its TTL left, kNotFound once it has expired.
  common::Result<int64_t> KeepAlive(int64_t lease);
  common::Status RevokeLease(int64_t lease);

  // Hands the keys put on `key` (every key with the prefix when `prefix`)
  // from revision `start_revision` on to `on_puts`, batch by batch, until
  // it returns false (Ok) or `timeout` passes (kTimeout). Watches the
  // member that answered last, on a connection of its own; its failure or
  // a start revision compacted away is an error (kTransport, kNotFound),
  // after which the caller reads what it missed and watches anew. With
  // authentication on, a call must have authenticated first.
  common::Status Watch(
      const std::string& key, bool prefix, int64_t start_revision,
      std::chrono::milliseconds timeout,
      const std::function<bool(std::vector<EtcdKeyValue>)>& on_puts);

 private:
  std::unique_ptr<httplib::Client> MakeClient(size_t endpoint) const;
  // POSTs `body` to `path` of a member, as the header says; the answer's
  // body, or the error etcd or the network gave.
  common::Result<std::string> Call(const std::string& path,
                                   const std::string& body);
  common::Result<std::string> CallOnce(size_t endpoint, const std::string& path,
                                       const std::string& body,
                                       std::chrono::milliseconds left,
                                       bool* try_next);
  common::Status Authenticate(size_t endpoint, std::chrono::milliseconds left);
  httplib::Client& ClientFor(size_t endpoint);

  const EtcdOptions options_;
  std::mutex mu_;
  size_t current_ = 0;  // the endpoint that answered last
  std::map<size_t, std::unique_ptr<httplib::Client>> clients_;
  std::string token_;  // etcd's auth token, when authenticated
};

}  // namespace hvd::rendezvous
