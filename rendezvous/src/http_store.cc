#include "hvd/rendezvous/http_store.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <unordered_set>

namespace hvd::rendezvous {

using common::Status;

HttpStore::HttpStore(common::HttpClientOptions options, std::string scope,
                     std::string prefix, std::chrono::milliseconds timeout)
    : client_(std::move(options)),
      scope_(std::move(scope)),
      prefix_(std::move(prefix)),
      timeout_(timeout) {}

void HttpStore::Throw(const Status& status) {
  last_error_ = status;
  std::string message = "rendezvous store: " + status.ToString();
  if (status.code() == common::Code::kTransport ||
      status.code() == common::Code::kTimeout ||
      status.code() == common::Code::kAborted) {
    throw gloo::IoException(message);
  }
  throw gloo::InvalidOperationException(message);
}

void HttpStore::set(const std::string& key, const std::vector<char>& data) {
  Status status =
      client_.Set(scope_, prefix_ + key, std::string(data.begin(), data.end()));
  if (!status.ok()) Throw(status);
}

std::vector<char> HttpStore::get(const std::string& key) {
  if (fetched_.count(key) == 0 && prefetch_group_of_.count(key) != 0) {
    wait({key}, timeout_);
  }
  auto cached = fetched_.find(key);
  if (cached != fetched_.end()) {
    std::vector<char> value(cached->second.begin(), cached->second.end());
    fetched_.erase(cached);
    return value;
  }
  auto value = client_.Get(scope_, prefix_ + key, timeout_);
  if (!value.ok()) Throw(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void HttpStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void HttpStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  std::vector<std::string> wanted;
  std::unordered_set<std::string> seen;
  auto want = [&](const std::string& key) {
    if (fetched_.count(key) == 0 && seen.insert(key).second) {
      wanted.push_back(prefix_ + key);
    }
  };
  for (const std::string& key : keys) {
    want(key);
    auto group = prefetch_group_of_.find(key);
    if (group == prefetch_group_of_.end()) continue;
    std::vector<std::string> members =
        std::move(prefetch_groups_[group->second]);
    for (const std::string& member : members) {
      want(member);
      prefetch_group_of_.erase(member);
    }
  }
  if (wanted.empty()) return;
  // Gloo passes its context's timeout (HOROVOD_GLOO_TIMEOUT_SECONDS, meant
  // for collectives); waiting for peers to arrive is the store's own budget
  // (HOROVOD_START_TIMEOUT), so the shorter one bounds it.
  const auto bound = std::min(timeout, timeout_);
  auto values = client_.MultiGet(scope_, wanted, bound);
  if (!values.ok()) Throw(NameLateRanks(values.status(), bound));
  for (auto& [key, value] : *values) {
    fetched_[key.substr(prefix_.size())] = std::move(value);
  }
}

void HttpStore::Prefetch(std::vector<std::string> keys) {
  for (const std::string& key : keys) {
    prefetch_group_of_[key] = prefetch_groups_.size();
  }
  prefetch_groups_.push_back(std::move(keys));
}

std::vector<int> LateMeshRanks(const RendezvousClient::Values& present,
                               const std::string& prefix, int rank, int size) {
  std::vector<int> late;
  for (int i = 0; i < size; ++i) {
    if (i != rank && !present.count(prefix + "rank_" + std::to_string(i))) {
      late.push_back(i);
    }
  }
  return late;
}

Status HttpStore::NameLateRanks(const Status& timeout,
                                std::chrono::milliseconds waited) {
  if (timeout.code() != common::Code::kTimeout || mesh_size_ == 0) {
    return timeout;
  }
  // This rank's own key is there, so the listing never waits.
  auto present = client_.WaitPrefix(scope_, prefix_ + "rank_", 1,
                                    std::chrono::milliseconds(0));
  if (!present.ok()) return timeout;
  const std::vector<int> late =
      LateMeshRanks(*present, prefix_, mesh_rank_, mesh_size_);
  if (late.empty()) return timeout;
  std::string ranks;
  constexpr size_t kNamed = 8;
  for (size_t i = 0; i < late.size() && i < kNamed; ++i) {
    ranks += (i ? ", " : "") + std::to_string(late[i]);
  }
  if (late.size() > kNamed) {
    ranks += " and " + std::to_string(late.size() - kNamed) + " more";
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(waited).count();
  return Status::Timeout(
      std::string(late.size() == 1 ? "rank " : "ranks ") + ranks +
      (late.size() == 1 ? " has" : " have") + " not reached hvd.init() in " +
      std::to_string(seconds) +
      " s (the start timeout, HOROVOD_START_TIMEOUT / --start-timeout, or "
      "the Gloo timeout if shorter): a script that does not call hvd.init() "
      "on every rank, a rank still busy before it, or a worker that cannot "
      "reach the rendezvous server (" +
      timeout.message() + ")");
}

void HttpStore::PrefetchFullMesh(int rank, int size) {
  mesh_rank_ = rank;
  mesh_size_ = size;
  std::vector<std::string> hostnames, addresses;
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    hostnames.push_back("rank_" + std::to_string(i));
    addresses.push_back(std::to_string(i));
  }
  Prefetch(std::move(hostnames));
  Prefetch(std::move(addresses));
}

}  // namespace hvd::rendezvous
