#include <gloo/broadcast.h>

#include "ops/gloo/gloo_ops.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::gloo_ops {

common::Status Broadcast(const ContextPtr& context, void* data, size_t bytes,
                         int root, const std::string& what) {
  return GlooCall(what, [&] {
    gloo::BroadcastOptions opts(context);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    gloo::broadcast(opts);
  });
}

}  // namespace hvd::runtime::gloo_ops
