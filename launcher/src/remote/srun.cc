#include "remote/srun.h"

#include <chrono>

#include "slurm/slurm_auth.h"
#include "slurm/slurm_jobs.h"

namespace hvd::launcher {

std::vector<std::string> SrunArgs(const std::string& node,
                                  const std::string& job_id,
                                  const std::string& step_name,
                                  const LaunchConfig& config) {
  // Explicit counts: srun would otherwise take the batch step's
  // SLURM_NTASKS, SLURM_NTASKS_PER_NODE, ... from the environment.
  // --export=NONE: srun would send its own environment (hvdrun's: the
  // job's variables) in clear in the step's launch request; the sealed
  // launch message carries them instead.
  std::vector<std::string> srun = {"srun",
                                   "--jobid=" + job_id,
                                   "--job-name=" + step_name,
                                   "--nodelist=" + node,
                                   "--nodes=1",
                                   "--ntasks=1",
                                   "--ntasks-per-node=1",
                                   "--overlap",
                                   "--kill-on-bad-exit=0",
                                   "--input=all",
                                   "--export=NONE"};
  if (config.slurm && config.slurm->cpus_per_task) {
    srun.push_back("--cpus-per-task=" +
                   std::to_string(*config.slurm->cpus_per_task));
  }
  return srun;
}

namespace {

// `scontrol show config`, once per hvdrun: a stuck slurmctld must not
// hold the first launch longer.
constexpr std::chrono::milliseconds kSlurmConfigTimeout{10000};

class SrunBackend : public LaunchBackend {
 public:
  explicit SrunBackend(const LaunchConfig& config) : config_(config) {}

  bool RunsHere(const std::string&) const override { return false; }

  common::Result<std::vector<std::string>> Command(
      const std::string& host, const std::vector<std::string>& words,
      const std::string& step_name) const override {
    if (!config_.slurm) {
      return common::Status::InvalidArgument(
          "--launcher slurm needs a Slurm allocation (SLURM_JOB_ID is "
          "unset): run hvdrun inside sbatch or salloc");
    }
    auto job =
        SlurmJobOfNode(*config_.slurm, host,
                       std::chrono::duration_cast<std::chrono::milliseconds>(
                           config_.start_timeout));
    if (!job.ok()) return job.status();
    std::vector<std::string> argv = SrunArgs(host, *job, step_name, config_);
    argv.insert(argv.end(), words.begin(), words.end());
    return argv;
  }

  // srun carries the step's standard input in clear TCP to slurmstepd.
  std::optional<std::string> MungeSealSocket() const override {
    return SlurmMungeSocket(kSlurmConfigTimeout);
  }

  const char* tool() const override { return "srun"; }

 private:
  const LaunchConfig& config_;
};

}  // namespace

std::unique_ptr<LaunchBackend> MakeSrunBackend(const LaunchConfig& config) {
  return std::make_unique<SrunBackend>(config);
}

}  // namespace hvd::launcher
