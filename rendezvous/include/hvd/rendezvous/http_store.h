// HttpStore: gloo::rendezvous::Store over the rendezvous server, so that a
// Gloo context can connect through the driver instead of a shared file
// system or Redis.
//
// Every key is stored as <prefix><key> in one scope: a generation (or any
// context family) picks its own prefix, and a late write from an older
// generation can never be read as a new one (the PrefixStore idea of Gloo
// and c10d).
//
// Requests: set() is one PUT. wait() is one multi-key GET that the server
// answers when every key exists, and it keeps the values, so the get() that
// Gloo issues next costs nothing. Prefetch() names a group of keys fetched
// together by the first get() or wait() that touches any of them; with the
// peers' hostname keys and address keys as two groups, a full-mesh
// rendezvous of N ranks costs about 4 requests per rank instead of 2N.
//
// Errors are thrown as Gloo expects: gloo::IoException when the server is
// unreachable or a wait times out (recreate the transport), and
// gloo::InvalidOperationException for a refused request (bad key, wrong
// secret, a server limit). last_error() keeps the Status behind the last
// exception so callers can recover its code.
//
// Not thread-safe: one HttpStore per context being built, as with Gloo's
// own stores.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "hvd/common/status.h"
#include "hvd/rendezvous/client.h"

namespace hvd::rendezvous {

class HttpStore : public gloo::rendezvous::Store {
 public:
  HttpStore(common::HttpClientOptions options, std::string scope,
            std::string prefix,
            std::chrono::milliseconds timeout = kDefaultTimeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to the store's timeout for the key to exist.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // Waits up to the shorter of `timeout` (Gloo passes its collective
  // timeout) and the store's timeout (the start timeout: how long peers
  // may take to arrive).
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Adds a group of keys fetched in one request by the first get() or
  // wait() that asks for any of them. A group must hold only keys that all
  // get set before anyone waits for the next group, or that request waits
  // until it times out.
  void Prefetch(std::vector<std::string> keys);

  // Prefetch groups for gloo::rendezvous::Context::connectFullMesh as rank
  // `rank` of `size`: the peers' host-name keys ("rank_<i>"), then their
  // address keys ("<i>"), the two phases of the Debian Gloo's full mesh.
  void PrefetchFullMesh(int rank, int size);

  const common::Status& last_error() const { return last_error_; }
  uint64_t requests() const { return client_.requests(); }

 private:
  [[noreturn]] void Throw(const common::Status& status);
  // A full mesh's wait that timed out after `waited`: `timeout` with the
  // peers that never published their host name named first (the ranks that
  // have not reached hvd.init(), or cannot reach the server), found with
  // one more request.
  common::Status NameLateRanks(const common::Status& timeout,
                               std::chrono::milliseconds waited);

  RendezvousClient client_;
  const std::string scope_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  // Groups not fetched yet, and which group each of their keys is in.
  std::vector<std::vector<std::string>> prefetch_groups_;
  std::unordered_map<std::string, size_t> prefetch_group_of_;
  // Values fetched by wait(), handed out once by get().
  std::unordered_map<std::string, std::string> fetched_;
  common::Status last_error_;
  // PrefetchFullMesh's rank and size (size 0: no full mesh).
  int mesh_rank_ = -1;
  int mesh_size_ = 0;
};

// The ranks of a `size`-rank full mesh, other than `rank`, that have no
// "<prefix>rank_<i>" among `present` (keys as the server lists them).
std::vector<int> LateMeshRanks(const RendezvousClient::Values& present,
                               const std::string& prefix, int rank, int size);

}  // namespace hvd::rendezvous
