// The three Gloo contexts of one worker in one generation: global (every
// rank), local (the ranks on this host) and cross (the ranks with this
// local rank, one per host), connected through the rendezvous server.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "transport/abortable_context.h"
#include "transport/socket_watch.h"

namespace hvd::runtime {

struct GlooContexts {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> global;
  std::shared_ptr<gloo::Context> local;  // null unless asked for
  std::shared_ptr<gloo::Context> cross;  // null unless asked for
  // For Runtime::Abort: the global context's connections, and the switch
  // that ends the waits of every context of this generation.
  std::vector<SocketId> global_sockets;
  std::shared_ptr<AbortSwitch> abort_switch;
};

enum class ContextSet { kGlobalOnly, kAll };

// Builds the Gloo TCP device on config.bind_address and connects the contexts.
// Keys live in scope "gloo" under "g<generation>/<context>/...", so generations
// never mix. A worker alone (size 1) connects through an in-process store. A
// peer that does not arrive within config.start_timeout, or a server that
// cannot be reached, is kTimeout / kTransport; a refused request keeps its own
// code. With kGlobalOnly, the local and cross contexts are not connected: every
// connection costs setup and teardown time on each reset, and no collective
// uses them yet (see docs/design.md).
common::Result<GlooContexts> ConnectGlooContexts(const RuntimeConfig& config,
                                                 int64_t generation,
                                                 ContextSet which);

// Connects the cross context of `config`'s rank (the ranks with its local
// rank, one per host) on `device`, keys under "g<generation>/cross/...";
// appends its connections to `sockets`.
common::Result<std::shared_ptr<gloo::Context>> ConnectCrossContext(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    std::vector<SocketId>* sockets);

// Connects the context of process set `id` (whose members call this in the
// same cycle; `rank` and `size` are within the set) on `device`, with keys
// under "g<generation>/set<id>.<serial>/": `serial` tells apart sets that
// get the same id in one generation (a removed set's id is given again).
// Appends its connections to `sockets`. A non-empty `part` connects a
// context of some of the set's ranks under ".../set<id>.<serial>/<part>"
// (the set's cross contexts).
common::Result<std::shared_ptr<gloo::Context>> ConnectSetContext(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    int32_t id, int64_t serial, int rank, int size,
    std::vector<SocketId>* sockets, const std::string& part = "");

}  // namespace hvd::runtime
