#include "remote/srun.h"

namespace hvd::launcher {

std::vector<std::string> SrunArgs(const std::string& node,
                                  const std::string& job_id,
                                  const std::string& step_name,
                                  const LaunchConfig& config) {
  // Explicit counts: srun would otherwise take the batch step's
  // SLURM_NTASKS, SLURM_NTASKS_PER_NODE, ... from the environment.
  std::vector<std::string> srun = {"srun",
                                   "--jobid=" + job_id,
                                   "--job-name=" + step_name,
                                   "--nodelist=" + node,
                                   "--nodes=1",
                                   "--ntasks=1",
                                   "--ntasks-per-node=1",
                                   "--overlap",
                                   "--kill-on-bad-exit=0",
                                   "--input=all"};
  if (config.slurm && config.slurm->cpus_per_task) {
    srun.push_back("--cpus-per-task=" +
                   std::to_string(*config.slurm->cpus_per_task));
  }
  return srun;
}

}  // namespace hvd::launcher
