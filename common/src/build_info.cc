#include "hvd/common/build_info.h"

#include <utility>
#include <vector>

namespace hvd::common {

BuildInfo GetBuildInfo() {
  BuildInfo info;
  info.version = HVD_VERSION;
  info.pytorch = HVD_BUILT_PYTHON != 0;
  // CUDA tensors run through NCCL (allreduce and broadcast so far).
  info.nccl_version = HVD_BUILT_NCCL;
  info.cuda = HVD_BUILT_NCCL != 0;
  return info;
}

std::string CheckBuildReport(const BuildInfo& info) {
  using Items = std::vector<std::pair<const char*, bool>>;
  auto section = [](const char* title, const Items& items) {
    std::string text = std::string("\n") + title + ":\n";
    for (const auto& [name, built] : items) {
      text += std::string("    [") + (built ? "X" : " ") + "] " + name + "\n";
    }
    return text;
  };
  return "hvd v" + info.version + ":\n" +
         section("Available Frameworks", {{"TensorFlow", false},
                                          {"PyTorch", info.pytorch},
                                          {"MXNet", false}}) +
         section("Available Controllers",
                 {{"MPI", info.mpi}, {"Gloo", info.gloo}}) +
         section("Available Tensor Operations",
                 {{"NCCL", info.nccl_version != 0},
                  {"DDL", info.ddl},
                  {"CCL", info.ccl},
                  {"MPI", info.mpi},
                  {"Gloo", info.gloo}});
}

}  // namespace hvd::common
