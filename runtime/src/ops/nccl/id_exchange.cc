#include "ops/nccl/id_exchange.h"

#include <algorithm>

#include "hvd/common/base64.h"
#include "hvd/rendezvous/client.h"

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

namespace {
constexpr char kScope[] = "gloo";  // the scope the contexts' keys live in
}  // namespace

std::string IdKey(int64_t generation, const std::string& communicator) {
  return "g" + std::to_string(generation) + "/nccl/" + communicator;
}

IdExchange StoreIdExchange(const RuntimeConfig& config, int64_t generation,
                           const std::string& communicator) {
  common::HttpClientOptions options;
  options.host = config.rendezvous_addr;
  options.port = config.rendezvous_port;
  options.secret = config.secret;
  const std::string key = IdKey(generation, communicator);
  const auto wait = config.start_timeout;
  return [options, key, wait](const UniqueId* made) -> Result<UniqueId> {
    rendezvous::RendezvousClient client(options);
    if (made != nullptr) {
      const std::string value = common::Base64Encode(
          std::string_view(made->bytes.data(), made->bytes.size()));
      Status status = client.Set(kScope, key, value);
      if (!status.ok()) return status.WithContext("publishing " + key);
      return *made;
    }
    Result<std::string> value = client.Get(kScope, key, wait);
    if (!value.ok()) {
      return value.status().WithContext("waiting for rank 0's " + key);
    }
    Result<std::string> bytes = common::Base64Decode(*value);
    UniqueId id;
    if (!bytes.ok() || bytes->size() != id.bytes.size()) {
      return Status::InvalidArgument("the store's " + key +
                                     " is not an NCCL unique id");
    }
    std::copy(bytes->begin(), bytes->end(), id.bytes.begin());
    return id;
  };
}

}  // namespace hvd::runtime::nccl
