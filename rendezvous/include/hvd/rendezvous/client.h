// RendezvousClient: typed, signed calls to the rendezvous server's key-value
// routes. Every failure is a Status whose code says what went wrong:
// kTransport (server unreachable after retries), kTimeout (a wait ran out),
// kNotFound, kUnauthenticated (wrong secret, clock skew), kInvalidArgument,
// kResourceExhausted (a server limit), kAborted (server shutting down).
//
// Thread-safe; calls on one client are serialized over one connection.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "hvd/common/http_client.h"
#include "hvd/common/status.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::rendezvous {

class RendezvousClient {
 public:
  using Values = std::map<std::string, std::string>;
  using Millis = std::chrono::milliseconds;

  explicit RendezvousClient(common::HttpClientOptions options);

  common::Status Set(const std::string& scope, const std::string& key,
                     const std::string& value);

  // With wait > 0, a long-poll: answers as soon as the key exists.
  common::Result<std::string> Get(const std::string& scope,
                                  const std::string& key,
                                  Millis wait = Millis(0));

  // Waits until all keys exist and returns them, in as few requests as the
  // URL length allows (one for up to a few hundred keys).
  common::Result<Values> MultiGet(const std::string& scope,
                                  const std::vector<std::string>& keys,
                                  Millis wait);

  // Waits until `count` keys beginning with `prefix` exist; returns all keys
  // with that prefix. One request whatever the count: the barrier primitive.
  common::Result<Values> WaitPrefix(const std::string& scope,
                                    const std::string& prefix, size_t count,
                                    Millis wait);

  common::Status Delete(const std::string& scope, const std::string& key);
  // Returns how many keys the scope held.
  common::Result<size_t> DeleteScope(const std::string& scope);

  // Checks `slot` in for the first generation after `after` and waits up to
  // `wait` for the rest of it, as process `worker` (see
  // ElasticBoard::CheckIn).
  common::Result<WorkerAssignment> CheckIn(const std::string& slot,
                                           int64_t after,
                                           const std::string& notify_address,
                                           Millis wait, int64_t worker = 0);

  // GET /v1/status, as JSON text.
  common::Result<std::string> ServerStatus();

  // Requests sent (attempts not counted), for tests and benchmarks.
  uint64_t requests() const { return requests_; }

 private:
  common::Result<common::HttpResponse> Call(const std::string& method,
                                            const std::string& target,
                                            const std::string& body,
                                            Millis long_poll);
  common::Result<Values> DecodeValues(const std::string& target,
                                      const std::string& body);

  common::HttpClient http_;
  std::atomic<uint64_t> requests_{0};
};

}  // namespace hvd::rendezvous
