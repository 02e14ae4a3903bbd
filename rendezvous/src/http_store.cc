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
  auto values = client_.MultiGet(scope_, wanted, std::min(timeout, timeout_));
  if (!values.ok()) Throw(values.status());
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

void HttpStore::PrefetchFullMesh(int rank, int size) {
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
