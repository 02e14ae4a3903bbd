#include <gloo/allgather.h>
#include <gloo/allreduce.h>

#include <cstring>

#include "ops/adasum.h"
#include "ops/dtype_dispatch.h"
#include "ops/gloo/gloo_ops.h"
#include "ops/reduce_function.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::gloo_ops {

using common::Status;

Status Allreduce(const ContextPtr& context, DataType dtype, ReduceOp op,
                 void* data, size_t count, const std::string& what) {
  return GlooCall(what, [&] {
    WithCppType(dtype, [&](auto type) {
      using T = decltype(type);
      gloo::AllreduceOptions opts(context);
      opts.setOutput(static_cast<T*>(data), count);
      opts.setReduceFunction(ReduceFunction<T>(op));
      gloo::allreduce(opts);
    });
  });
}

// That moves and holds size() times the data of a reduction;
// docs/design.md weighs it against Horovod's algorithm.
Status Adasum(const ContextPtr& context, DataType dtype, void* data,
              const std::vector<size_t>& counts, const std::string& what) {
  size_t count = 0;
  for (size_t c : counts) count += c;
  const size_t bytes = count * DataTypeSize(dtype);
  std::vector<uint8_t> gathered(bytes * context->size);
  Status status = GlooCall(what, [&] {
    gloo::AllgatherOptions opts(context);
    opts.setInput(static_cast<uint8_t*>(data), bytes);
    opts.setOutput(gathered.data(), gathered.size());
    gloo::allgather(opts);
  });
  if (!status.ok()) return status;
  AdasumTree(dtype, gathered.data(), context->size, counts);
  std::memcpy(data, gathered.data(), bytes);
  return Status::Ok();
}

}  // namespace hvd::runtime::gloo_ops
