#include "connection_table.h"

#include <algorithm>

namespace hvd::common {

ConnectionTable::ConnectionTable(AdmissionLimits limits) : limits_([&] {
  limits.max_connections = std::max<size_t>(limits.max_connections, 1);
  limits.max_unauthenticated = std::max<size_t>(limits.max_unauthenticated, 1);
  limits.max_unauthenticated_per_peer =
      std::max<size_t>(limits.max_unauthenticated_per_peer, 1);
  return limits;
}()) {}

bool ConnectionTable::EvictOldest(const std::set<Id>& among,
                                  std::vector<Id>* evicted) {
  if (among.empty()) return false;
  // Remove() may erase `among` itself (a peer's last id): copy the id first.
  Id oldest = *among.begin();
  Remove(oldest);
  evicted->push_back(oldest);
  return true;
}

ConnectionTable::Admission ConnectionTable::Admit(const std::string& peer) {
  Admission admission;
  auto found = peers_.find(peer);
  if (found != peers_.end() && found->second.unauthenticated.size() >=
                                   limits_.max_unauthenticated_per_peer) {
    EvictOldest(found->second.unauthenticated, &admission.evicted);
  }
  if (unauthenticated_.size() >= limits_.max_unauthenticated) {
    EvictOldest(unauthenticated_, &admission.evicted);
  }
  if (entries_.size() >= limits_.max_connections &&
      !EvictOldest(unauthenticated_, &admission.evicted)) {
    return admission;
  }
  admission.admitted = true;
  admission.id = next_id_++;
  entries_.emplace(admission.id, Entry{peer, false});
  unauthenticated_.insert(admission.id);
  Peer& mine = peers_[peer];
  ++mine.connections;
  mine.unauthenticated.insert(admission.id);
  return admission;
}

void ConnectionTable::Authenticate(Id id) {
  auto found = entries_.find(id);
  if (found == entries_.end() || found->second.authenticated) return;
  found->second.authenticated = true;
  unauthenticated_.erase(id);
  peers_[found->second.peer].unauthenticated.erase(id);
}

void ConnectionTable::Remove(Id id) {
  auto found = entries_.find(id);
  if (found == entries_.end()) return;
  auto peer = peers_.find(found->second.peer);
  if (peer != peers_.end()) {
    peer->second.unauthenticated.erase(id);
    if (--peer->second.connections == 0) peers_.erase(peer);
  }
  unauthenticated_.erase(id);
  entries_.erase(found);
}

std::optional<ConnectionTable::Id>
ConnectionTable::EvictOldestUnauthenticated() {
  std::vector<Id> evicted;
  if (!EvictOldest(unauthenticated_, &evicted)) return std::nullopt;
  return evicted.front();
}

size_t ConnectionTable::from_peer(const std::string& peer) const {
  auto found = peers_.find(peer);
  return found == peers_.end() ? 0 : found->second.connections;
}

size_t ConnectionTable::unauthenticated_from_peer(
    const std::string& peer) const {
  auto found = peers_.find(peer);
  return found == peers_.end() ? 0 : found->second.unauthenticated.size();
}

}  // namespace hvd::common
