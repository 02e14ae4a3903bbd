#include "hvd/rendezvous/etcd_seal.h"

#include "hvd/common/hmac.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;

namespace {

constexpr size_t kTagDigits = 64;  // hex HMAC-SHA256

std::string Tag(std::string_view secret, std::string_view key,
                std::string_view value) {
  std::string message = "hvd etcd store\n";
  message.append(key);
  message.push_back('\n');
  message.append(value);
  return common::HmacSha256Hex(secret, message);
}

}  // namespace

std::string SealEtcdValue(std::string_view secret, std::string_view key,
                          std::string_view value) {
  return Tag(secret, key, value) + std::string(value);
}

Result<std::string> OpenEtcdValue(std::string_view secret, std::string_view key,
                                  std::string_view sealed) {
  if (sealed.size() < kTagDigits ||
      !common::ConstantTimeEquals(
          sealed.substr(0, kTagDigits),
          Tag(secret, key, sealed.substr(kTagDigits)))) {
    return Status::Unauthenticated(
        "the value of '" + std::string(key) +
        "' in etcd is not sealed with this job's secret: written by "
        "something outside the job, or by another job under the same "
        "prefix");
  }
  return std::string(sealed.substr(kTagDigits));
}

Result<std::pair<std::string, int>> LeadingDriverAddress(
    EtcdClient& etcd, std::string_view secret, const std::string& prefix) {
  const std::string key = prefix + "driver";
  auto kvs = etcd.Range(key);
  if (!kvs.ok()) return kvs.status();
  if (kvs->empty()) return Status::NotFound("no " + key + " in etcd");
  auto address = OpenEtcdValue(secret, key, (*kvs)[0].value);
  if (!address.ok()) return address.status();
  const size_t colon = address->rfind(':');
  int port = 0;
  for (size_t i = colon + 1; colon != std::string::npos && i < address->size();
       ++i) {
    const char c = (*address)[i];
    port = (c >= '0' && c <= '9' && port < 65536) ? port * 10 + (c - '0') : -1;
    if (port < 0) break;
  }
  if (colon == std::string::npos || colon == 0 || port <= 0 || port > 65535) {
    return Status::InvalidArgument(key + " in etcd is no HOST:PORT: '" +
                                   address->substr(0, 100) + "'");
  }
  return std::make_pair(address->substr(0, colon), port);
}

}  // namespace hvd::rendezvous
