// What hvd writes in etcd is sealed: the hex HMAC-SHA256, under the job's
// secret, of the full key and the value, then the value. A writer without
// the secret can put keys into etcd, but a value that does not verify is
// refused, and a value cannot be moved to another key either. Used by the
// workers' store (etcd_store.h) and hvdrun's side of the job.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"

namespace hvd::rendezvous {

// `value` sealed for `key` under `secret`, and opened again:
// kUnauthenticated when the seal does not verify.
std::string SealEtcdValue(std::string_view secret, std::string_view key,
                          std::string_view value);
common::Result<std::string> OpenEtcdValue(std::string_view secret,
                                          std::string_view key,
                                          std::string_view sealed);

// The rendezvous server of the hvdrun that leads the job, as it keeps it
// at <prefix>driver: (host, port), its seal checked. Workers look there
// when the server they knew stops answering: a new leader's is elsewhere.
common::Result<std::pair<std::string, int>> LeadingDriverAddress(
    EtcdClient& etcd, std::string_view secret, const std::string& prefix);

}  // namespace hvd::rendezvous
