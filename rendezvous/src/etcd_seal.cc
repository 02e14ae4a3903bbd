#include "hvd/rendezvous/etcd_seal.h"

#include "hvd/common/hmac.h"

namespace hvd::rendezvous {

using common::Result;
using common::Status;

namespace {

constexpr size_t kTagDigits = 64;  // hex HMAC-SHA256

std::string Tag(std::string_view seal_key, std::string_view key,
                std::string_view value) {
  std::string message = "hvd etcd store\n";
  message.append(key);
  message.push_back('\n');
  message.append(value);
  return common::HmacSha256Hex(seal_key, message);
}

std::string SignedMessage(std::string_view key, std::string_view value) {
  std::string message = "hvd etcd signed\n";
  message.append(key);
  message.push_back('\n');
  message.append(value);
  return message;
}

}  // namespace

std::string SealEtcdValue(std::string_view seal_key, std::string_view key,
                          std::string_view value) {
  return Tag(seal_key, key, value) + std::string(value);
}

Result<std::string> OpenEtcdValue(std::string_view seal_key,
                                  std::string_view key,
                                  std::string_view sealed) {
  if (sealed.size() < kTagDigits ||
      !common::ConstantTimeEquals(
          sealed.substr(0, kTagDigits),
          Tag(seal_key, key, sealed.substr(kTagDigits)))) {
    return Status::Unauthenticated(
        "the value of '" + std::string(key) +
        "' in etcd is not sealed with its generation's key: written by "
        "something outside the generation, or by another job under the "
        "same prefix");
  }
  return std::string(sealed.substr(kTagDigits));
}

std::string SignEtcdValue(const common::JobSigningKey& signer,
                          std::string_view key, std::string_view value) {
  return signer.Sign(SignedMessage(key, value)) + std::string(value);
}

Result<std::string> OpenSignedEtcdValue(std::string_view public_key,
                                        std::string_view key,
                                        std::string_view signed_value) {
  const size_t digits = common::kJobSignatureDigits;
  const std::string_view value =
      signed_value.size() < digits ? "" : signed_value.substr(digits);
  Status verified = common::VerifyJobSignature(
      public_key, SignedMessage(key, value), signed_value.substr(0, digits));
  if (!verified.ok()) {
    return Status::Unauthenticated(
        "the value of '" + std::string(key) +
        "' in etcd is not signed by an hvdrun of this job (" +
        verified.message() +
        "): written by something outside the job, or by another job under "
        "the same prefix");
  }
  return std::string(value);
}

Result<std::pair<std::string, int>> LeadingDriverAddress(
    EtcdClient& etcd, std::string_view public_key, const std::string& prefix) {
  const std::string key = prefix + "driver";
  auto kvs = etcd.Range(key);
  if (!kvs.ok()) return kvs.status();
  if (kvs->empty()) return Status::NotFound("no " + key + " in etcd");
  auto address = OpenSignedEtcdValue(public_key, key, (*kvs)[0].value);
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
