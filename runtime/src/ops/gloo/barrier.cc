#include <gloo/barrier.h>

#include "ops/gloo/gloo_ops.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::gloo_ops {

common::Status Barrier(const ContextPtr& context, const std::string& what) {
  return GlooCall(what, [&] {
    gloo::BarrierOptions opts(context);
    gloo::barrier(opts);
  });
}

}  // namespace hvd::runtime::gloo_ops
