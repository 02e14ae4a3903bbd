// hvdrun: parse -> run -> exit code. Also the entry of both guard modes, of
// the host check's remote end, and of `hvdrun status` and `slurm-hosts`.
#include <cstring>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "hvd/common/logging.h"
#include "options/cli.h"
#include "policy/host_check.h"
#include "process/guard.h"
#include "remote/adopt_client.h"
#include "remote/adopt_socket.h"
#include "remote/host_check_run.h"
#include "remote/remote_guard.h"
#include "slurm/slurm_jobs.h"
#include "status/status_command.h"

int main(int argc, char** argv) {
  using namespace hvd::launcher;
  if (argc > 1 && std::strcmp(argv[1], kGuardFlag) == 0) {
    return GuardMain(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], kRemoteGuardFlag) == 0) {
    return RemoteGuardMain(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], kAdoptFlag) == 0) {
    return AdoptMain(argc, argv);
  }
  if (argc == 2 && std::strcmp(argv[1], kHostCheckFlag) == 0) {
    return HostCheckMain();
  }
  if (argc > 1 && std::strcmp(argv[1], kStatusCommand) == 0) {
    return StatusMain(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc > 1 && std::strcmp(argv[1], kSlurmHostsCommand) == 0) {
    return SlurmHostsMain(std::vector<std::string>(argv + 2, argv + argc));
  }
  BlockDriverSignals();  // before any thread exists
  CliOutcome cli =
      ParseCommandLine(std::vector<std::string>(argv, argv + argc));
  if (!cli.config) return cli.exit_code;
  LaunchConfig& config = *cli.config;
  // The driver's own log: --log-level, else info with --verbose, else the
  // HVD_LOG_LEVEL/HOROVOD_LOG_LEVEL default. Its lines and the "hvdrun: ..."
  // ones (common::Announce) carry the time unless --log-without-timestamp
  // (or HOROVOD_LOG_HIDE_TIME=1) hides it.
  hvd::common::Status logging = hvd::common::InitLogging("driver", -1);
  if (config.log_hide_time) hvd::common::SetLogTime(!*config.log_hide_time);
  if (!logging.ok()) {
    spdlog::warn("{}", logging.message());
  }
  if (!config.log_level.empty()) {
    spdlog::set_level(*hvd::common::ParseLogLevel(config.log_level, ""));
  } else if (config.verbose) {
    spdlog::set_level(spdlog::level::info);
  }
  return RunJob(config);
}
