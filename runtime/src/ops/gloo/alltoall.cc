#include <gloo/alltoallv.h>

#include "ops/gloo/gloo_ops.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::gloo_ops {

common::Status Alltoall(const ContextPtr& context, const void* input,
                        const std::vector<int64_t>& sent, void* output,
                        const std::vector<int64_t>& received,
                        const std::string& what) {
  return GlooCall(what, [&] {
    // Bytes as elements: one alltoallv for every data type; Gloo wants
    // non-null buffers even when nothing moves.
    static uint8_t nothing;
    gloo::AlltoallvOptions opts(context);
    const void* in = input ? input : &nothing;
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), sent);
    opts.setOutput(output ? static_cast<uint8_t*>(output) : &nothing, received);
    gloo::alltoallv(opts);
  });
}

}  // namespace hvd::runtime::gloo_ops
