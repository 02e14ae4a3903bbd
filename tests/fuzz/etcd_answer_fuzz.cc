// Fuzzes the readers of etcd's JSON gateway answers
// (rendezvous/src/etcd_json.cc), the opening of a sealed store value
// (etcd_store.cc) and of a value hvdrun signed (etcd_seal.h), and the
// unwrapping of a generation key (common/worker_key.h): whatever a member,
// or something posing as one, sends back (an answer or a line of a watch),
// each reader returns a value or a status, never crashes, and what it
// accepts is well formed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "etcd_json.h"
#include "fuzz_check.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/etcd_seal.h"
#include "hvd/rendezvous/etcd_store.h"

namespace {

using hvd::common::Code;
namespace json = hvd::rendezvous::etcd_json;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto kvs = json::KeyValuesOf(body);
  HVD_FUZZ_CHECK(kvs.ok() || kvs.status().code() == Code::kInternal);
  auto txn = json::TxnResultOf(body);
  HVD_FUZZ_CHECK(txn.ok() || txn.status().code() == Code::kInternal);
  for (const auto& r : {json::RevisionOf(body), json::DeletedOf(body)}) {
    HVD_FUZZ_CHECK(r.ok() || r.status().code() == Code::kInternal);
  }
  auto lease = json::LeaseIdOf(body);
  HVD_FUZZ_CHECK(!lease.ok() || *lease != 0);
  auto ttl = json::KeepAliveTtlOf(body);
  HVD_FUZZ_CHECK(ttl.ok() ? *ttl > 0
                          : ttl.status().code() == Code::kInternal ||
                                ttl.status().code() == Code::kNotFound);
  auto token = json::TokenOf(body);
  HVD_FUZZ_CHECK(!token.ok() || !token->empty());
  if (auto error = json::ErrorOf(body)) {
    HVD_FUZZ_CHECK(!json::StatusOf(*error).ok());
  }
  // A line of a watch: never an error object taken for a message.
  auto watch = json::WatchMessageOf(body);
  HVD_FUZZ_CHECK(!watch.ok() || !json::ErrorOf(body).has_value());
  // A value opens only if sealing what it holds gives it back.
  auto opened = hvd::rendezvous::OpenEtcdValue("secret", "/job/g1/0", body);
  HVD_FUZZ_CHECK(opened.ok()
                     ? hvd::rendezvous::SealEtcdValue("secret", "/job/g1/0",
                                                      *opened) == body
                     : opened.status().code() == Code::kUnauthenticated);
  // A signed value opens only if it is hvdrun's signature (Ed25519 signs
  // deterministically, so signing what it holds gives it back).
  static const auto signer = hvd::common::JobSigningKey::FromSecret("secret");
  HVD_FUZZ_CHECK(signer.ok());
  auto checked = hvd::rendezvous::OpenSignedEtcdValue(signer->public_key(),
                                                      "/job/driver", body);
  HVD_FUZZ_CHECK(checked.ok()
                     ? hvd::rendezvous::SignEtcdValue(*signer, "/job/driver",
                                                      *checked) == body
                     : checked.status().code() == Code::kUnauthenticated);
  // A wrapped generation key unwraps only from 64 hex digits, and back.
  auto unwrapped = hvd::common::UnwrapGenerationKey("worker", 3, body);
  HVD_FUZZ_CHECK(
      unwrapped.ok()
          ? hvd::common::WrapGenerationKey("worker", 3, *unwrapped) == body
          : unwrapped.status().code() == Code::kUnauthenticated);
  return 0;
}
