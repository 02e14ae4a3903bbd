// How hvdrun starts a process on a node of a Slurm allocation: srun's
// command line, shared by the host check and every worker step.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "job/launch_config.h"
#include "remote/launch_backend.h"

namespace hvd::launcher {

// Step names, as sacct and squeue --steps show them.
inline constexpr char kWorkerStepName[] = "hvd-worker";
inline constexpr char kHostCheckStepName[] = "hvd-host-check";

// `srun <options>`, to which the caller appends the command's words: one
// task on `node` in job `job_id`'s allocation, sharing its resources with
// the steps already there (--overlap: hvdrun's own batch step and the
// other workers), with the job's CPUs per task (SLURM_CPUS_PER_TASK) so
// Slurm binds it as it would bind a task of the job, and none of hvdrun's
// environment (--export=NONE: Slurm's launch request is not encrypted):
// the worker's environment travels on the step's standard input, sealed
// with MUNGE (remote_launch.h, munge_seal.h).
std::vector<std::string> SrunArgs(const std::string& node,
                                  const std::string& job_id,
                                  const std::string& step_name,
                                  const LaunchConfig& config);

// --launcher slurm: every process, this node's too, runs as a step of the
// job of the allocation that holds its node (slurm_jobs.h), its words
// after SrunArgs.
std::unique_ptr<LaunchBackend> MakeSrunBackend(const LaunchConfig& config);

}  // namespace hvd::launcher
