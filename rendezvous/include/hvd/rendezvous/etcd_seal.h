// What hvd writes in etcd carries proof of its writer, over the full key
// and the value, so a value that does not verify is refused and a value
// cannot be moved to another key (docs/security.md):
// - sealed: what workers write (a generation's Gloo addresses and NCCL
//   ids, etcd_store.h): the hex HMAC-SHA256, under the generation's key
//   (worker_key.h, GenerationKey), then the value. Only that generation's
//   members (and hvdrun) hold the key.
// - signed: what hvdrun writes (its address, the job's settings and
//   state, its status page): the hex Ed25519 signature under the job's
//   signing key (job_signing_key.h), then the value. Anyone with the
//   public key can check it; only an hvdrun of the job can make it.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "hvd/common/job_signing_key.h"
#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"

namespace hvd::rendezvous {

// `value` sealed for `key` under `seal_key`, and opened again:
// kUnauthenticated when the seal does not verify.
std::string SealEtcdValue(std::string_view seal_key, std::string_view key,
                          std::string_view value);
common::Result<std::string> OpenEtcdValue(std::string_view seal_key,
                                          std::string_view key,
                                          std::string_view sealed);

// `value` signed for `key` with the job's key, and checked again with its
// public half: kUnauthenticated when the signature does not verify.
std::string SignEtcdValue(const common::JobSigningKey& signer,
                          std::string_view key, std::string_view value);
common::Result<std::string> OpenSignedEtcdValue(std::string_view public_key,
                                                std::string_view key,
                                                std::string_view signed_value);

// The rendezvous server of the hvdrun that leads the job, as it keeps it
// at <prefix>driver: (host, port), its signature checked. Workers look
// there when the server they knew stops answering: a new leader's is
// elsewhere.
common::Result<std::pair<std::string, int>> LeadingDriverAddress(
    EtcdClient& etcd, std::string_view public_key, const std::string& prefix);

}  // namespace hvd::rendezvous
