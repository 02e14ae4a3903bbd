#include "hvd/rendezvous/etcd_store.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <thread>

namespace hvd::rendezvous {

using common::Result;
using common::Status;

EtcdStore::EtcdStore(EtcdOptions options, std::string seal_key,
                     std::string prefix, std::chrono::milliseconds timeout)
    : etcd_(std::move(options)),
      seal_key_(std::move(seal_key)),
      prefix_(std::move(prefix)),
      timeout_(timeout) {}

void EtcdStore::Fail(Status status) {
  last_error_ = status;
  // Gloo's convention: I/O trouble means "rebuild the transport"; anything
  // else is a mistake that retrying does not fix.
  if (status.code() == common::Code::kTransport ||
      status.code() == common::Code::kTimeout) {
    throw gloo::IoException(status.ToString());
  }
  throw gloo::InvalidOperationException(status.ToString());
}

void EtcdStore::set(const std::string& key, const std::vector<char>& data) {
  const std::string full = prefix_ + key;
  ++requests_;
  auto put = etcd_.Put(
      full, SealEtcdValue(seal_key_, full,
                          std::string_view(data.data(), data.size())));
  if (!put.ok()) Fail(put.status().WithContext("setting " + full + " in etcd"));
}

Status EtcdStore::Keep(const EtcdKeyValue& kv) {
  const std::string key = kv.key.substr(prefix_.size());
  if (values_.count(key) > 0) return Status::Ok();
  auto opened = OpenEtcdValue(seal_key_, kv.key, kv.value);
  if (!opened.ok()) return opened.status();
  values_.emplace(key, std::move(*opened));
  return Status::Ok();
}

void EtcdStore::Await(const std::vector<std::string>& keys,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(5);
  const auto have_all = [&] {
    return std::all_of(keys.begin(), keys.end(),
                       [&](const auto& k) { return values_.count(k) > 0; });
  };
  for (bool first = true; !have_all(); first = false) {
    const auto now = std::chrono::steady_clock::now();
    if (!first && now >= deadline) {
      std::string missing;
      for (const std::string& k : keys) {
        if (values_.count(k) == 0) missing += (missing.empty() ? "" : ", ") + k;
      }
      Fail(Status::Timeout("waited " + std::to_string(timeout.count()) +
                           " ms for " + prefix_ + "{" + missing +
                           "} in etcd: a peer did not arrive"));
    }
    // What is there now, and the revision it was read at.
    ++requests_;
    EtcdOp read;
    read.key = prefix_;
    read.prefix = true;
    auto found = etcd_.Txn({}, {read}, {});
    if (!found.ok()) {
      Fail(found.status().WithContext("reading " + prefix_ + " in etcd"));
    }
    for (const EtcdKeyValue& kv : found->ranges.at(0)) {
      if (Status kept = Keep(kv); !kept.ok()) Fail(kept);
    }
    if (have_all()) break;
    // Then every later put, as etcd commits it, until the keys are all in
    // (nothing may throw through the client's receiver).
    ++requests_;
    Status refused;
    Status watched =
        etcd_.Watch(prefix_, /*prefix=*/true, found->revision + 1,
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()),
                    [&](std::vector<EtcdKeyValue> puts) {
                      for (const EtcdKeyValue& kv : puts) {
                        refused = Keep(kv);
                        if (!refused.ok()) return false;
                      }
                      return !have_all();
                    });
    if (!refused.ok()) Fail(refused);
    if (watched.ok() || watched.code() == common::Code::kTimeout) continue;
    // The watched member failed: read again from another, after a pause
    // (bounded by the deadline).
    last_error_ = watched;
    std::this_thread::sleep_for(
        std::min(backoff, std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

std::vector<char> EtcdStore::get(const std::string& key) {
  Await({key}, timeout_);
  const std::string& value = values_.at(key);
  return std::vector<char>(value.begin(), value.end());
}

void EtcdStore::wait(const std::vector<std::string>& keys) {
  Await(keys, timeout_);
}

void EtcdStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  Await(keys, std::min(timeout, timeout_));
}

}  // namespace hvd::rendezvous
