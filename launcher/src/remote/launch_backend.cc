#include "remote/launch_backend.h"

#include "remote/host_address.h"
#include "remote/srun.h"
#include "remote/ssh.h"

namespace hvd::launcher {

namespace {

// --launcher local: every process on this machine; any other host is an
// error.
class LocalBackend : public LaunchBackend {
 public:
  bool RunsHere(const std::string& host) const override {
    return IsLocalHost(host);
  }

  common::Result<std::vector<std::string>> Command(
      const std::string& host, const std::vector<std::string>&,
      const std::string&) const override {
    return common::Status::InvalidArgument(
        "host " + host +
        " is not this machine, and --launcher local starts workers only "
        "here");
  }

  const char* tool() const override { return "hvdrun"; }
};

}  // namespace

std::unique_ptr<LaunchBackend> MakeLaunchBackend(const LaunchConfig& config) {
  switch (config.launcher) {
    case Launcher::kLocal:
      return std::make_unique<LocalBackend>();
    case Launcher::kSlurm:
      return MakeSrunBackend(config);
    case Launcher::kSsh:
      break;
  }
  return MakeSshBackend(config);
}

}  // namespace hvd::launcher
