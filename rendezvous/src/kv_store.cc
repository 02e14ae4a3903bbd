#include "hvd/rendezvous/kv_store.h"

#include <algorithm>

namespace hvd::rendezvous {

using common::Result;
using common::Status;

// One blocked WaitAll/WaitPrefix call. `needed` counts what is still missing:
// awaited keys absent (WaitAll) or keys short of the count (WaitPrefix). Set
// and Delete adjust it for the waiters their key concerns.
struct KvStore::Waiter {
  std::condition_variable cv;
  int64_t needed = 0;
  bool by_prefix = false;
  std::string prefix;
  std::vector<std::string> keys;
};

KvStore::KvStore(KvLimits limits) : limits_(limits) {}

KvStore::~KvStore() { Shutdown(); }

Status KvStore::CheckKey(const std::string& key, const char* what) const {
  if (key.empty()) return Status::InvalidArgument(std::string("empty ") + what);
  if (key.size() > limits_.max_key_bytes) {
    return Status::ResourceExhausted(std::string(what) + " of " +
                                     std::to_string(key.size()) +
                                     " bytes exceeds the limit max_key_bytes=" +
                                     std::to_string(limits_.max_key_bytes));
  }
  return Status::Ok();
}

void KvStore::Changed(Scope& scope) {
  ++scope.version;
  scope.snapshots.clear();
}

size_t KvStore::EntryBytes(const std::string& key, const std::string& value) {
  return key.size() + value.size() + kKvEntryOverheadBytes;
}

size_t KvStore::ScopeBytes(const std::string& name) {
  return name.size() + kKvScopeOverheadBytes;
}

Status KvStore::CheckWaitSize(size_t keys) const {
  if (keys <= limits_.max_keys_per_wait) return Status::Ok();
  return Status::ResourceExhausted(
      "a wait for " + std::to_string(keys) +
      " keys exceeds the limit max_keys_per_wait=" +
      std::to_string(limits_.max_keys_per_wait));
}

void KvStore::OnPresenceChange(Scope& scope, const std::string& key,
                               int delta) {
  auto notify = [delta](Waiter* waiter) {
    waiter->needed -= delta;
    if (waiter->needed <= 0) waiter->cv.notify_one();
  };
  auto it = scope.key_waiters.find(key);
  if (it != scope.key_waiters.end()) {
    for (Waiter* waiter : it->second) notify(waiter);
  }
  for (Waiter* waiter : scope.prefix_waiters) {
    if (key.compare(0, waiter->prefix.size(), waiter->prefix) == 0) {
      notify(waiter);
    }
  }
}

Status KvStore::Set(const std::string& scope_name, const std::string& key,
                    std::string value) {
  Status key_status = CheckKey(key);
  if (!key_status.ok()) return key_status;
  if (value.size() > limits_.max_value_bytes) {
    return Status::ResourceExhausted(
        "value of " + std::to_string(value.size()) +
        " bytes exceeds the limit max_value_bytes=" +
        std::to_string(limits_.max_value_bytes));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Scope& scope = scopes_[scope_name];
  auto it = scope.entries.find(key);
  size_t old_bytes =
      it == scope.entries.end() ? 0 : EntryBytes(key, it->second);
  size_t new_total = total_bytes_ - old_bytes + EntryBytes(key, value) +
                     (scope.entries.empty() ? ScopeBytes(scope_name) : 0);
  if (new_total > limits_.max_total_bytes) {
    if (scope.entries.empty()) DropScopeIfIdle(scope_name);
    return Status::ResourceExhausted(
        "store is full: setting this value would hold " +
        std::to_string(new_total) + " bytes, over the limit max_total_bytes=" +
        std::to_string(limits_.max_total_bytes));
  }
  total_bytes_ = new_total;
  Changed(scope);
  if (it != scope.entries.end()) {
    it->second = std::move(value);
  } else {
    scope.entries.emplace(key, std::move(value));
    OnPresenceChange(scope, key, +1);
  }
  return Status::Ok();
}

Result<std::string> KvStore::Get(const std::string& scope_name,
                                 const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto scope = scopes_.find(scope_name);
  if (scope != scopes_.end()) {
    auto it = scope->second.entries.find(key);
    if (it != scope->second.entries.end()) return it->second;
  }
  return Status::NotFound("no key '" + key + "' in scope '" + scope_name + "'");
}

Status KvStore::Delete(const std::string& scope_name, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto scope = scopes_.find(scope_name);
  if (scope != scopes_.end()) {
    auto it = scope->second.entries.find(key);
    if (it != scope->second.entries.end()) {
      total_bytes_ -= EntryBytes(key, it->second);
      Changed(scope->second);
      scope->second.entries.erase(it);
      if (scope->second.entries.empty()) total_bytes_ -= ScopeBytes(scope_name);
      OnPresenceChange(scope->second, key, -1);
      DropScopeIfIdle(scope_name);
      return Status::Ok();
    }
  }
  return Status::NotFound("no key '" + key + "' in scope '" + scope_name + "'");
}

size_t KvStore::DeletePrefix(const std::string& scope_name,
                             const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  auto scope = scopes_.find(scope_name);
  if (scope == scopes_.end()) return 0;
  auto& entries = scope->second.entries;
  size_t count = 0;
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) {
      ++it;
      continue;
    }
    total_bytes_ -= EntryBytes(it->first, it->second);
    OnPresenceChange(scope->second, it->first, -1);
    it = entries.erase(it);
    ++count;
  }
  if (count > 0) {
    Changed(scope->second);
    if (entries.empty()) total_bytes_ -= ScopeBytes(scope_name);
  }
  DropScopeIfIdle(scope_name);
  return count;
}

void KvStore::DropScopeIfIdle(const std::string& name) {
  auto it = scopes_.find(name);
  // Scopes with waiters stay: a waiter holds a reference to its scope.
  if (it != scopes_.end() && it->second.entries.empty() &&
      it->second.key_waiters.empty() && it->second.prefix_waiters.empty()) {
    scopes_.erase(it);
  }
}

Result<KvStore::Values> KvStore::WaitAll(const std::string& scope_name,
                                         const std::vector<std::string>& keys,
                                         Clock::time_point deadline) {
  Status size_status = CheckWaitSize(keys.size());
  if (!size_status.ok()) return size_status;
  for (const std::string& key : keys) {
    Status status = CheckKey(key);
    if (!status.ok()) return status;
  }
  Waiter waiter;
  waiter.keys = keys;
  std::unique_lock<std::mutex> lock(mu_);
  Scope& scope = scopes_[scope_name];
  for (const std::string& key : keys) {
    if (scope.entries.count(key) == 0) ++waiter.needed;
    scope.key_waiters[key].push_back(&waiter);
  }
  Status status = Await(lock, scope, waiter, deadline);
  Values values;
  for (const std::string& key : keys) {
    auto it = scope.entries.find(key);
    if (it != scope.entries.end()) values.insert(*it);
  }
  DropScopeIfIdle(scope_name);
  if (status.code() == common::Code::kTimeout) {
    return TimeoutError(scope_name, waiter,
                        std::to_string(keys.size()) + " keys", values.size());
  }
  if (!status.ok()) return status;
  return values;
}

Result<std::shared_ptr<const KvStore::PrefixSnapshot>> KvStore::WaitPrefix(
    const std::string& scope_name, const std::string& prefix, size_t count,
    Clock::time_point deadline) {
  Status size_status = CheckWaitSize(count);
  if (!size_status.ok()) return size_status;
  if (!prefix.empty()) {
    Status prefix_status = CheckKey(prefix, "prefix");
    if (!prefix_status.ok()) return prefix_status;
  }
  auto matches = [&prefix](const std::string& key) {
    return key.compare(0, prefix.size(), prefix) == 0;
  };
  Waiter waiter;
  waiter.by_prefix = true;
  waiter.prefix = prefix;
  waiter.needed = static_cast<int64_t>(count);
  std::unique_lock<std::mutex> lock(mu_);
  Scope& scope = scopes_[scope_name];
  for (const auto& entry : scope.entries) {
    if (matches(entry.first)) --waiter.needed;
  }
  scope.prefix_waiters.push_back(&waiter);
  Status status = Await(lock, scope, waiter, deadline);
  auto& snapshots = scope.snapshots;
  auto cached = snapshots.find(prefix);
  std::shared_ptr<const PrefixSnapshot> result;
  if (cached != snapshots.end() && cached->second.first == scope.version) {
    result = cached->second.second.lock();
  }
  if (!result) {
    auto snapshot = std::make_shared<PrefixSnapshot>();
    for (const auto& entry : scope.entries) {
      if (matches(entry.first)) snapshot->values.insert(entry);
    }
    if (cached == snapshots.end() && snapshots.size() >= kKvMaxCachedPrefixes) {
      for (auto it = snapshots.begin(); it != snapshots.end();) {
        it = it->second.second.expired() ? snapshots.erase(it) : std::next(it);
      }
    }
    if (cached != snapshots.end()) {
      cached->second = {scope.version, snapshot};
    } else if (snapshots.size() < kKvMaxCachedPrefixes) {
      snapshots.emplace(prefix, std::make_pair(scope.version, snapshot));
    }
    result = std::move(snapshot);
  }
  DropScopeIfIdle(scope_name);
  if (status.code() == common::Code::kTimeout) {
    return TimeoutError(
        scope_name, waiter,
        std::to_string(count) + " keys with prefix '" + prefix + "'",
        result->values.size());
  }
  if (!status.ok()) return status;
  return result;
}

Status KvStore::Await(std::unique_lock<std::mutex>& lock, Scope& scope,
                      Waiter& waiter, Clock::time_point deadline) {
  ++waiters_;
  while (!shutdown_ && waiter.needed > 0) {
    if (waiter.cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  --waiters_;
  if (waiter.by_prefix) {
    auto& list = scope.prefix_waiters;
    list.erase(std::remove(list.begin(), list.end(), &waiter), list.end());
  } else {
    for (const std::string& key : waiter.keys) {
      auto it = scope.key_waiters.find(key);
      if (it == scope.key_waiters.end()) continue;
      auto& list = it->second;
      list.erase(std::remove(list.begin(), list.end(), &waiter), list.end());
      if (list.empty()) scope.key_waiters.erase(it);
    }
  }
  if (shutdown_) return Status::Aborted("rendezvous store is shutting down");
  if (waiter.needed > 0) return Status::Timeout("");
  return Status::Ok();
}

Status KvStore::TimeoutError(const std::string& scope_name,
                             const Waiter& waiter, const std::string& what,
                             size_t present) const {
  std::string message = "timed out waiting for " + what + " in scope '" +
                        scope_name + "' (" + std::to_string(present) +
                        " present)";
  if (!waiter.by_prefix) {
    auto scope = scopes_.find(scope_name);
    size_t named = 0;
    for (const std::string& key : waiter.keys) {
      if (scope != scopes_.end() && scope->second.entries.count(key)) continue;
      if (named++ == 0) message += "; missing:";
      if (named > 5) {
        message += " ...";
        break;
      }
      message += " '" + key + "'";
    }
  }
  return Status::Timeout(message);
}

void KvStore::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  for (auto& [name, scope] : scopes_) {
    for (auto& [key, waiters] : scope.key_waiters) {
      for (Waiter* waiter : waiters) waiter->cv.notify_one();
    }
    for (Waiter* waiter : scope.prefix_waiters) waiter->cv.notify_one();
  }
}

KvStats KvStore::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  KvStats stats;
  stats.scopes = scopes_.size();
  for (const auto& [name, scope] : scopes_) {
    stats.keys += scope.entries.size();
    stats.cached_prefixes += scope.snapshots.size();
  }
  stats.bytes = total_bytes_;
  stats.waiters = waiters_;
  return stats;
}

}  // namespace hvd::rendezvous
