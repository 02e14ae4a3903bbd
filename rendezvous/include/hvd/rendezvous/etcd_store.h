// EtcdStore: gloo::rendezvous::Store on etcd, the seam HttpStore fills
// for the embedded backend, for a job whose rendezvous lives in etcd
// (hvdrun --rendezvous-backend etcd; the runtime's gloo_contexts.cc).
//
// Every key is <prefix><key>, and every value is sealed (etcd_seal.h)
// with `seal_key`, the key of the generation the prefix belongs to. A
// writer without it can put keys into etcd, but a value that does not
// verify is refused (gloo::InvalidOperationException
// naming the key), never handed to Gloo; a value cannot be moved to
// another key either.
//
// wait() reads the whole prefix with one range request, then watches it
// from that revision on until every key it waits for has come or its
// timeout passes (gloo::IoException), and keeps the values for the get()
// Gloo issues next: two requests per rank, whatever the number of peers,
// and each key seen as soon as etcd commits it. A watched member that
// fails is read again through another (a pause of 5 ms, doubling to
// 100 ms, between tries). etcd out of reach is a gloo::IoException too.
// last_error() keeps the Status behind the last exception.
//
// Not thread-safe: one EtcdStore per context being built.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"
#include "hvd/rendezvous/etcd_seal.h"

namespace hvd::rendezvous {

class EtcdStore : public gloo::rendezvous::Store {
 public:
  EtcdStore(EtcdOptions options, std::string seal_key, std::string prefix,
            std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to the store's timeout for the key to exist.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // Waits up to the shorter of `timeout` and the store's timeout.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  const common::Status& last_error() const { return last_error_; }
  // Requests sent to etcd so far.
  uint64_t requests() const { return requests_; }

 private:
  // Reads the prefix until every key in `keys` has a value, or `timeout`.
  void Await(const std::vector<std::string>& keys,
             std::chrono::milliseconds timeout);
  // Opens a value read or watched under the prefix and keeps it;
  // kUnauthenticated when its seal does not verify.
  common::Status Keep(const EtcdKeyValue& kv);
  [[noreturn]] void Fail(common::Status status);

  EtcdClient etcd_;
  const std::string seal_key_;  // the generation's (worker_key.h)
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  std::unordered_map<std::string, std::string> values_;  // by key, opened
  common::Status last_error_;
  uint64_t requests_ = 0;
};

}  // namespace hvd::rendezvous
