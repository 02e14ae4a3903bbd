// KvStore: the in-memory key-value store behind the rendezvous server.
//
// Keys live in scopes (one per Gloo context family, per generation, ...), so
// that a whole scope can be dropped at once. Waits block on a condition
// variable until the awaited keys exist or a deadline passes: there is no
// polling, and a Set wakes only the waiters that care about its key.
//
// Thread-safe: any number of threads may call any method concurrently.
// Shutdown() wakes every waiter with kAborted and makes later waits fail.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::rendezvous {

// What the byte budget charges besides a key's and a value's own bytes:
// the hash node, the two strings and the bookkeeping of a key (measured
// about 100 bytes with libstdc++), and of a scope that holds keys (its maps,
// about 250, plus its name). Without them a client could hold a thousand
// times the budget in empty one-byte keys.
inline constexpr size_t kKvEntryOverheadBytes = 128;
inline constexpr size_t kKvScopeOverheadBytes = 512;
// Prefix answers cached per scope (each a weak reference to the snapshot
// waiters share); past this many, expired ones are dropped and a new prefix
// is answered uncached rather than remembered.
inline constexpr size_t kKvMaxCachedPrefixes = 256;

struct KvLimits {
  // Also the longest prefix a wait may name.
  size_t max_key_bytes = 512;
  size_t max_value_bytes = 16u << 20;
  // Sum over all scopes of key and value bytes plus kKvEntryOverheadBytes
  // per key, and of kKvScopeOverheadBytes plus the name per scope that holds
  // keys. A 1024-worker job's Gloo keys of two generations take a few MiB.
  size_t max_total_bytes = 64u << 20;
  // Keys one wait may name.
  size_t max_keys_per_wait = 1u << 16;
};

struct KvStats {
  size_t scopes = 0;
  size_t keys = 0;
  size_t bytes = 0;
  size_t waiters = 0;
  size_t cached_prefixes = 0;  // prefix answers remembered, all scopes
};

class KvStore {
 public:
  using Clock = std::chrono::steady_clock;
  using Values = std::map<std::string, std::string>;

  // What a prefix wait returns: the matching keys at one version of the
  // scope, immutable, and shared by every waiter that completes on that
  // version. A barrier of N waiters thus builds one snapshot, not N, and
  // `encoded` lets the HTTP layer encode it once for all of them.
  struct PrefixSnapshot {
    Values values;
    mutable std::once_flag encode_once;
    // Every answer of this snapshot is written from this one buffer, and
    // holds the snapshot (so later waiters of its version still find it).
    mutable std::string encoded;
  };

  explicit KvStore(KvLimits limits = KvLimits());
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // Creates or replaces. kResourceExhausted names the limit exceeded.
  common::Status Set(const std::string& scope, const std::string& key,
                     std::string value);

  // kNotFound when absent.
  common::Result<std::string> Get(const std::string& scope,
                                  const std::string& key) const;

  // kNotFound when absent.
  common::Status Delete(const std::string& scope, const std::string& key);

  // Removes every key of the scope; returns how many there were.
  size_t DeleteScope(const std::string& scope) {
    return DeletePrefix(scope, "");
  }
  // Removes every key of the scope that starts with `prefix` (a generation's
  // Gloo keys); returns how many there were.
  size_t DeletePrefix(const std::string& scope, const std::string& prefix);

  // Waits until every key in `keys` exists in `scope`, then returns their
  // values. kTimeout at `deadline` (naming up to a few missing keys),
  // kAborted after Shutdown().
  common::Result<Values> WaitAll(const std::string& scope,
                                 const std::vector<std::string>& keys,
                                 Clock::time_point deadline);

  // Waits until at least `count` keys starting with `prefix` exist in
  // `scope`, then returns all of them. Errors as WaitAll.
  common::Result<std::shared_ptr<const PrefixSnapshot>> WaitPrefix(
      const std::string& scope, const std::string& prefix, size_t count,
      Clock::time_point deadline);

  void Shutdown();

  KvStats Stats() const;
  const KvLimits& limits() const { return limits_; }

 private:
  struct Waiter;
  struct Scope {
    std::unordered_map<std::string, std::string> entries;
    // Waiters per awaited key (WaitAll) and prefix waiters (WaitPrefix).
    std::unordered_map<std::string, std::vector<Waiter*>> key_waiters;
    std::vector<Waiter*> prefix_waiters;
    // Bumped by every change, which also forgets the cached snapshots (all
    // stale). Held weakly: a snapshot lives only while a waiter still
    // answers with it, so stale copies of the values are not kept; at most
    // kKvMaxCachedPrefixes entries.
    uint64_t version = 0;
    std::unordered_map<std::string,
                       std::pair<uint64_t, std::weak_ptr<const PrefixSnapshot>>>
        snapshots;
  };

  common::Status CheckKey(const std::string& key,
                          const char* what = "key") const;
  // A change to `scope`: a new version, whose snapshots are not made yet.
  static void Changed(Scope& scope);
  // The budget's charge for one key, and for a scope that holds keys.
  static size_t EntryBytes(const std::string& key, const std::string& value);
  static size_t ScopeBytes(const std::string& name);
  common::Status CheckWaitSize(size_t keys) const;
  // Bookkeeping when a key appears (+1) or disappears (-1); caller holds mu_.
  void OnPresenceChange(Scope& scope, const std::string& key, int delta);
  // Blocks until the waiter is satisfied, the deadline passes or the store
  // shuts down, then unregisters it. Ok when satisfied.
  common::Status Await(std::unique_lock<std::mutex>& lock, Scope& scope,
                       Waiter& waiter, Clock::time_point deadline);
  common::Status TimeoutError(const std::string& scope_name,
                              const Waiter& waiter, const std::string& what,
                              size_t present) const;
  void DropScopeIfIdle(const std::string& name);

  const KvLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Scope> scopes_;  // guarded by mu_
  size_t total_bytes_ = 0;                         // guarded by mu_
  size_t waiters_ = 0;                             // guarded by mu_
  bool shutdown_ = false;                          // guarded by mu_
};

}  // namespace hvd::rendezvous
