#include "remote/remote_command.h"

#include "job/worker_env.h"
#include "remote/srun.h"
#include "remote/ssh.h"
#include "slurm/slurm_jobs.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

Result<std::vector<std::string>> RemoteCommand(
    const std::string& host, const std::vector<std::string>& words,
    const std::string& step_name, const LaunchConfig& config) {
  std::vector<std::string> argv;
  switch (config.launcher) {
    case Launcher::kLocal:
      return Status::InvalidArgument(
          "host " + host +
          " is not this machine, and --launcher local starts workers only "
          "here");
    case Launcher::kSsh:
      argv = SshArgs(host, config);
      argv.push_back("exec " + ShellWords(words));
      return argv;
    case Launcher::kSlurm: {
      if (!config.slurm) {
        return Status::InvalidArgument(
            "--launcher slurm needs a Slurm allocation (SLURM_JOB_ID is "
            "unset): run hvdrun inside sbatch or salloc");
      }
      auto job =
          SlurmJobOfNode(*config.slurm, host,
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             config.start_timeout));
      if (!job.ok()) return job.status();
      argv = SrunArgs(host, *job, step_name, config);
      argv.insert(argv.end(), words.begin(), words.end());
      return argv;
    }
  }
  return Status::Internal("unknown launcher");
}

const char* RemoteTool(const LaunchConfig& config) {
  return config.launcher == Launcher::kSlurm ? "srun" : "ssh";
}

}  // namespace hvd::launcher
