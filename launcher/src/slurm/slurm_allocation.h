// A Slurm allocation as hvdrun sees it from inside (sbatch, salloc): the
// job, its nodes and the slots on each, read from the variables Slurm sets.
// Pure functions, unit-tested in tests/launcher/slurm_allocation_test.cc.
//
// The slot rule (docs/slurm.md): a node offers as many slots as the job has
// tasks there (SLURM_TASKS_PER_NODE, what `--ntasks-per-node` or `-n` ask
// for); without that variable, its CPUs (SLURM_JOB_CPUS_PER_NODE) divided
// by SLURM_CPUS_PER_TASK. Open MPI's mpirun counts slots the same way, so an
// sbatch script written for `mpirun` or `srun` asks for the same resources.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

// Slurm's host list ("node[01-03,7],gpu-a[1-2]-x") expanded into names, in
// order, zero padding kept. kInvalidArgument names what is malformed.
common::Result<std::vector<std::string>> ExpandHostList(std::string_view list);

// Slurm's per-node counts ("2(x3),1") expanded into one count per node.
common::Result<std::vector<int>> ExpandNodeCounts(std::string_view counts);

// Reads a variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
EnvLookup ProcessEnvironment();

// The allocation hvdrun runs in: nullopt outside one (SLURM_JOB_ID unset);
// kInvalidArgument when a variable is malformed (the message names it).
common::Result<std::optional<SlurmAllocation>> AllocationFromEnvironment(
    const EnvLookup& env);

}  // namespace hvd::launcher
