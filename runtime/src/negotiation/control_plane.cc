#include "negotiation/control_plane.h"

#include <gloo/broadcast.h>
#include <gloo/gather.h>

#include <string>

#include "transport/gloo_call.h"

namespace hvd::runtime {

using common::Status;

GlooControlPlane::GlooControlPlane(std::shared_ptr<gloo::Context> context)
    : context_(std::move(context)) {}

Status GlooControlPlane::Gather(std::string_view what, const void* in,
                                size_t bytes, void* out) {
  return GlooCall(std::string(what), [&] {
    gloo::GatherOptions opts(context_);
    // Gloo's setInput wants a mutable pointer; a gather only reads it.
    opts.setInput(static_cast<char*>(const_cast<void*>(in)), bytes);
    if (context_->rank == 0) {
      opts.setOutput(static_cast<char*>(out), bytes * context_->size);
    }
    opts.setRoot(0);
    gloo::gather(opts);
  });
}

Status GlooControlPlane::Broadcast(std::string_view what, void* buffer,
                                   size_t bytes) {
  return GlooCall(std::string(what), [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<char*>(buffer), bytes);
    opts.setRoot(0);
    gloo::broadcast(opts);
  });
}

}  // namespace hvd::runtime
