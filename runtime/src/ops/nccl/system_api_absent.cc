// The seam in a build without NCCL: nothing to call, and an error that says
// how to get it.
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

common::Result<std::unique_ptr<Api>> SystemApi() {
  return common::Status::InvalidArgument(
      "this hvd was built without NCCL, so it has no GPU collectives: "
      "install the CUDA toolkit with NCCL (2.27 or newer) and build with "
      "-DHVD_WITH_NCCL=on (docs/gpu.md)");
}

int BuiltNcclVersion() { return 0; }

}  // namespace hvd::runtime::nccl
