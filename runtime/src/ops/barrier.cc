#include "ops/executor.h"
#include "ops/gloo/gloo_ops.h"

namespace hvd::runtime {

OpResult RunBarrier(const Backends& backends, const Response& /*response*/,
                    const TensorEntry& /*entry*/) {
  OpResult result;
  if (backends.context->size > 1) {
    result.status = gloo_ops::Barrier(backends.context, "barrier");
  }
  return result;
}

OpResult RunJoin(const Backends& /*backends*/, const Response& response,
                 const TensorEntry& /*entry*/) {
  OpResult result;
  result.sizes = response.sizes;
  return result;
}

}  // namespace hvd::runtime
