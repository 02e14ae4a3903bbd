#include "transport/gloo_contexts.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <functional>
#include <memory>
#include <string>

#include "hvd/rendezvous/etcd_store.h"
#include "hvd/rendezvous/http_store.h"
#include "hvd/rendezvous/protocol.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

using rendezvous::protocol::kGlooScope;

Result<std::shared_ptr<gloo::Context>> Connect(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    const std::string& prefix, int rank, int size) {
  auto context = std::make_shared<AbortableContext>(rank, size, abort_switch);
  context->setTimeout(config.gloo_timeout);
  // connectFullMesh wants a mutable reference.
  std::shared_ptr<gloo::transport::Device> device_ref = device;
  if (size == 1) {
    gloo::rendezvous::HashStore store;
    context->connectFullMesh(store, device_ref);
    context->Arm();
    return std::shared_ptr<gloo::Context>(context);
  }
  // The store's own account of a failure, which Gloo's exception loses.
  std::function<Status()> last_error;
  std::unique_ptr<gloo::rendezvous::Store> store;
  if (config.etcd) {
    auto seal_key = config.EtcdSealKey(generation);
    if (!seal_key.ok()) {
      return seal_key.status().WithContext("connecting Gloo context " + prefix);
    }
    auto etcd = std::make_unique<rendezvous::EtcdStore>(
        *config.etcd, *seal_key, config.etcd_prefix + kGlooScope + "/" + prefix,
        config.start_timeout);
    last_error = [raw = etcd.get()] { return raw->last_error(); };
    store = std::move(etcd);
  } else {
    auto http = std::make_unique<rendezvous::HttpStore>(
        config.DriverClientOptions(), kGlooScope, prefix, config.start_timeout);
    // One request per phase of the full mesh instead of one per peer.
    http->PrefetchFullMesh(rank, size);
    last_error = [raw = http.get()] { return raw->last_error(); };
    store = std::move(http);
  }
  try {
    context->connectFullMesh(*store, device_ref);
  } catch (const gloo::Exception& e) {
    Status cause = last_error();
    if (cause.ok()) {
      bool io = dynamic_cast<const gloo::IoException*>(&e) != nullptr;
      cause = io ? Status::Transport(e.what()) : Status::Internal(e.what());
    }
    return cause.WithContext("connecting Gloo context " + prefix);
  } catch (const std::exception& e) {  // GLOO_ENFORCE's EnforceNotMet
    return Status::Internal("connecting Gloo context " + prefix + ": " +
                            e.what());
  }
  context->Arm();
  return std::shared_ptr<gloo::Context>(context);
}

std::string CrossPrefix(const RuntimeConfig& config, int64_t generation) {
  return rendezvous::protocol::GlooGenerationPrefix(generation) + "cross/" +
         std::to_string(config.layout.local_rank) + "/";
}

}  // namespace

Result<GlooContexts> ConnectGlooContexts(const RuntimeConfig& config,
                                         int64_t generation, ContextSet which) {
  gloo::transport::tcp::attr attr;
  attr.hostname = config.bind_address;
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("cannot open Gloo's TCP device on " +
                                   config.bind_address + " (host " +
                                   config.hostname + "): " + e.what());
  }
  const std::string gen =
      rendezvous::protocol::GlooGenerationPrefix(generation);
  GlooContexts contexts;
  contexts.device = device;
  contexts.abort_switch = std::make_shared<AbortSwitch>();
  const DescriptorSnapshot before = TakeDescriptorSnapshot();
  auto global =
      Connect(config, device, contexts.abort_switch, generation,
              gen + "global/", config.layout.rank, config.layout.size);
  if (!global.ok()) return global.status();
  contexts.global = *global;
  // Connect() has closed its rendezvous connection by now: what is new and
  // connected, and not accepted by another server, belongs to the context.
  contexts.global_sockets = NewConnectedSockets(before);
  if (which == ContextSet::kGlobalOnly) return contexts;
  // Ranks on a host are contiguous, so the host's first rank names it.
  auto local = Connect(
      config, device, contexts.abort_switch, generation,
      gen + "local/" +
          std::to_string(config.layout.rank - config.layout.local_rank) + "/",
      config.layout.local_rank, config.layout.local_size);
  if (!local.ok()) return local.status();
  contexts.local = *local;
  auto cross = Connect(config, device, contexts.abort_switch, generation,
                       CrossPrefix(config, generation),
                       config.layout.cross_rank, config.layout.cross_size);
  if (!cross.ok()) return cross.status();
  contexts.cross = *cross;
  return contexts;
}

Result<std::shared_ptr<gloo::Context>> ConnectSetContext(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    int32_t id, int64_t serial, int rank, int size,
    std::vector<SocketId>* sockets, const std::string& part) {
  const DescriptorSnapshot before = TakeDescriptorSnapshot();
  auto context = Connect(
      config, device, abort_switch, generation,
      rendezvous::protocol::GlooGenerationPrefix(generation) + "set" +
          std::to_string(id) + "." + std::to_string(serial) + "/" + part,
      rank, size);
  if (!context.ok()) return context.status();
  for (const SocketId& socket : NewConnectedSockets(before)) {
    sockets->push_back(socket);
  }
  return *context;
}

Result<std::shared_ptr<gloo::Context>> ConnectCrossContext(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    std::vector<SocketId>* sockets) {
  const DescriptorSnapshot before = TakeDescriptorSnapshot();
  auto context = Connect(config, device, abort_switch, generation,
                         CrossPrefix(config, generation),
                         config.layout.cross_rank, config.layout.cross_size);
  if (!context.ok()) return context.status();
  for (const SocketId& socket : NewConnectedSockets(before)) {
    sockets->push_back(socket);
  }
  return *context;
}

}  // namespace hvd::runtime
