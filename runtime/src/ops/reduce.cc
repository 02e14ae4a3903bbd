#include "ops/reduce.h"

#include "ops/fusion_buffer.h"
#include "ops/gloo/gloo_ops.h"
#include "tuning/timeline.h"

namespace hvd::runtime {

using common::Status;

Status ReduceInPlace(const Backends& backends, const Request& r, void* data,
                     const std::vector<size_t>& counts,
                     const std::string& what) {
  const auto& context = backends.context;
  size_t count = 0;
  for (size_t c : counts) count += c;
  ScaleBuffer(r.dtype, data, count, r.prescale);
  Status status;
  if (context->size == 1 || count == 0) {
    // Nothing to exchange.
  } else if (r.op == ReduceOp::kAdasum) {
    status = gloo_ops::Adasum(context, r.dtype, data, counts, what);
  } else if (backends.host != nullptr && backends.host->allreduce_on()) {
    status = backends.host->Allreduce(r.dtype, r.op, data, count, what);
  } else {
    status = gloo_ops::Allreduce(context, r.dtype, r.op, data, count, what);
  }
  if (!status.ok()) return status;
  const int divisor = r.op == ReduceOp::kAverage ? context->size : 1;
  ScaleBuffer(r.dtype, data, count, r.postscale, divisor);
  return Status::Ok();
}

Status PackAndReduce(const Backends& backends,
                     const std::vector<const TensorEntry*>& entries,
                     std::vector<uint8_t>* buffer, const PhaseFn& phase,
                     const char* activity) {
  Say(phase, kActivityMemcpyInFusionBuffer);
  Pack(entries, buffer);
  Say(phase, activity);
  Status status =
      ReduceInPlace(backends, entries.front()->request, buffer->data(),
                    Counts(entries), UnitName(entries));
  if (status.ok()) Say(phase, kActivityMemcpyOutFusionBuffer);
  return status;
}

}  // namespace hvd::runtime
