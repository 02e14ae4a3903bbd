#include "ops/nccl/id_exchange.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "hvd/common/base64.h"
#include "hvd/rendezvous/client.h"
#include "hvd/rendezvous/etcd_store.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

namespace {
using rendezvous::protocol::kGlooScope;  // where the contexts' keys live
}  // namespace

std::string IdKey(int64_t generation, const std::string& communicator) {
  return rendezvous::protocol::GlooGenerationPrefix(generation) + "nccl/" +
         communicator;
}

namespace {

Result<UniqueId> DecodeId(const std::string& key, const std::string& bytes) {
  UniqueId id;
  if (bytes.size() != id.bytes.size()) {
    return Status::InvalidArgument("the store's " + key +
                                   " is not an NCCL unique id");
  }
  std::copy(bytes.begin(), bytes.end(), id.bytes.begin());
  return id;
}

// With the etcd backend the id goes where the Gloo keys go: into etcd,
// not to the leading hvdrun's server, which a takeover replaces.
IdExchange EtcdIdExchange(const RuntimeConfig& config, int64_t generation,
                          std::string key) {
  return [options = *config.etcd, seal_key = config.EtcdSealKey(generation),
          prefix = config.etcd_prefix + kGlooScope + "/", key,
          wait =
              config.start_timeout](const UniqueId* made) -> Result<UniqueId> {
    if (!seal_key.ok()) return seal_key.status().WithContext(key);
    rendezvous::EtcdStore store(options, *seal_key, prefix, wait);
    try {
      if (made != nullptr) {
        store.set(key,
                  std::vector<char>(made->bytes.begin(), made->bytes.end()));
        return *made;
      }
      const std::vector<char> value = store.get(key);
      return DecodeId(key, std::string(value.begin(), value.end()));
    } catch (const std::exception& e) {
      Status cause = store.last_error();
      if (cause.ok()) cause = Status::Transport(e.what());
      return cause.WithContext(made != nullptr ? "publishing " + key
                                               : "waiting for rank 0's " + key);
    }
  };
}

}  // namespace

IdExchange StoreIdExchange(const RuntimeConfig& config, int64_t generation,
                           const std::string& communicator) {
  const std::string key = IdKey(generation, communicator);
  if (config.etcd) return EtcdIdExchange(config, generation, key);
  common::HttpClientOptions options = config.DriverClientOptions();
  const auto wait = config.start_timeout;
  return [options, key, wait](const UniqueId* made) -> Result<UniqueId> {
    rendezvous::RendezvousClient client(options);
    if (made != nullptr) {
      const std::string value = common::Base64Encode(
          std::string_view(made->bytes.data(), made->bytes.size()));
      Status status = client.Set(kGlooScope, key, value);
      if (!status.ok()) return status.WithContext("publishing " + key);
      return *made;
    }
    Result<std::string> value = client.Get(kGlooScope, key, wait);
    if (!value.ok()) {
      return value.status().WithContext("waiting for rank 0's " + key);
    }
    Result<std::string> bytes = common::Base64Decode(*value);
    if (!bytes.ok()) {
      return Status::InvalidArgument("the store's " + key +
                                     " is not an NCCL unique id");
    }
    return DecodeId(key, *bytes);
  };
}

}  // namespace hvd::runtime::nccl
