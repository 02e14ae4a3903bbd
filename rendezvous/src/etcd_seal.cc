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

}  // namespace hvd::rendezvous
