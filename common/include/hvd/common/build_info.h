// What this build of hvd contains, for the build queries of the Python API
// (hvd.gloo_built() and friends, as Horovod has them) and for
// `hvdrun --check-build`. One place, so the two always agree.
#pragma once

#include <string>

namespace hvd::common {

struct BuildInfo {
  std::string version;
  bool pytorch = false;  // the Python extension, which hvd.torch runs on
  bool gloo = true;      // the controller and CPU collectives: always
  int nccl_version = 0;  // 0: not built (Horovod's nccl_built() answer)
  bool cuda = false;
  bool rocm = false;
  bool mpi = false;
  bool ddl = false;
  bool ccl = false;
};

BuildInfo GetBuildInfo();

// horovodrun --check-build's report: version, then frameworks, controllers
// and tensor operations, each line "[X] name" or "[ ] name".
std::string CheckBuildReport(const BuildInfo& info);

}  // namespace hvd::common
