#include <gloo/allgatherv.h>

#include "ops/gloo/gloo_ops.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::gloo_ops {

common::Status Allgather(const ContextPtr& context, const void* input,
                         const std::vector<size_t>& bytes_by_rank, void* output,
                         const std::string& what) {
  return GlooCall(what, [&] {
    gloo::AllgathervOptions opts(context);
    // Gloo wants a non-null input even for an empty contribution.
    static uint8_t nothing;
    const size_t mine = bytes_by_rank[context->rank];
    opts.setInput(mine
                      ? const_cast<uint8_t*>(static_cast<const uint8_t*>(input))
                      : &nothing,
                  mine);
    opts.setOutput(static_cast<uint8_t*>(output), bytes_by_rank);
    gloo::allgatherv(opts);
  });
}

}  // namespace hvd::runtime::gloo_ops
