// ConnectionTable: which connections a SignedHttpServer holds, and the
// admission rule that keeps strangers from taking the capacity signed
// clients need.
//
// A connection is unauthenticated until a request on it passes the
// signature check. Unauthenticated connections are bounded per peer address
// and in total, and every connection counts toward the total. When a new
// connection would pass a bound, the OLDEST unauthenticated connection
// (of that peer, or anywhere) is dropped instead of refusing the newcomer:
// a real client sends its signed request within milliseconds of connecting
// and becomes authenticated, so an attacker flooding from the same address
// (on one machine, everything is 127.0.0.1) only ever evicts its own idle
// connections. Only when the total is full of authenticated connections is
// a newcomer refused.
//
// Pure and not thread-safe: the server's I/O thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace hvd::common {

struct AdmissionLimits {
  size_t max_connections = 8192;
  size_t max_unauthenticated = 1024;
  size_t max_unauthenticated_per_peer = 256;
};

class ConnectionTable {
 public:
  using Id = uint64_t;

  struct Admission {
    bool admitted = false;
    Id id = 0;  // valid when admitted
    // Connections to close now, already removed from the table.
    std::vector<Id> evicted;
  };

  explicit ConnectionTable(AdmissionLimits limits);

  // A new connection from `peer` (an address, without port).
  Admission Admit(const std::string& peer);
  // A request on `id` passed the signature check.
  void Authenticate(Id id);
  // The connection closed; unknown ids (already evicted) are ignored.
  void Remove(Id id);
  // Removes and returns the oldest unauthenticated connection, if any (the
  // process ran out of file descriptors).
  std::optional<Id> EvictOldestUnauthenticated();

  size_t total() const { return entries_.size(); }
  size_t unauthenticated() const { return unauthenticated_.size(); }
  size_t from_peer(const std::string& peer) const;
  size_t unauthenticated_from_peer(const std::string& peer) const;
  const AdmissionLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::string peer;
    bool authenticated = false;
  };
  struct Peer {
    size_t connections = 0;
    std::set<Id> unauthenticated;  // ids grow: the first is the oldest
  };

  // Removes the oldest unauthenticated connection of `among` (all when
  // null); false when there is none.
  bool EvictOldest(const std::set<Id>& among, std::vector<Id>* evicted);

  const AdmissionLimits limits_;
  Id next_id_ = 1;
  std::unordered_map<Id, Entry> entries_;
  std::set<Id> unauthenticated_;
  std::unordered_map<std::string, Peer> peers_;
};

}  // namespace hvd::common
