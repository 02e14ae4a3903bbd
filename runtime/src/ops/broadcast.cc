#include "ops/executor.h"
#include "ops/fusion_buffer.h"
#include "ops/gloo/gloo_ops.h"

namespace hvd::runtime {

OpResult RunBroadcast(const Backends& backends, const Response& /*response*/,
                      const TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t bytes = ElementCount(r.shape) * DataTypeSize(r.dtype);
  OpResult result;
  if (backends.context->size == 1 || bytes == 0) return result;
  if (backends.host != nullptr) {
    result.status =
        backends.host->Broadcast(entry.output, bytes, r.root, What(entry));
  } else {
    result.status = gloo_ops::Broadcast(backends.context, entry.output, bytes,
                                        r.root, What(entry));
  }
  return result;
}

}  // namespace hvd::runtime
