// How the members of an NCCL communicator get rank 0's unique id: through
// the rendezvous store, under the generation's prefix, as the Gloo contexts
// meet, so a late id of an older generation is never read as a new one.
// The store is the one the Gloo contexts use: hvdrun's server, or etcd
// with --rendezvous-backend etcd (sealed there, and independent of which
// hvdrun leads, so a takeover does not break the next communicator).
#pragma once

#include <cstdint>
#include <string>

#include "hvd/runtime/config.h"
#include "ops/nccl/communicator.h"

namespace hvd::runtime::nccl {

// Rank 0 sets key "g<generation>/nccl/<communicator>" of scope "gloo" to
// its id (base64 on hvdrun's server; in etcd under <prefix>gloo/); the
// others wait for it up to config.start_timeout.
// `communicator` names it within the generation ("set0.0/dev1").
IdExchange StoreIdExchange(const RuntimeConfig& config, int64_t generation,
                           const std::string& communicator);

// The id's key, for tests.
std::string IdKey(int64_t generation, const std::string& communicator);

}  // namespace hvd::runtime::nccl
