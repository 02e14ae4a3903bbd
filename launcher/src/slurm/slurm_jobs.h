// The Slurm jobs whose nodes a job inside an allocation runs on: its own,
// and the companion jobs a user submits to grow it (docs/slurm.md).
//
// A companion is a running job of the same user named HVD_SLURM_GROW_NAME,
// by default "hvd-grow-<the job's id>". Each of its nodes offers its tasks
// divided by its nodes as slots; its end (scancel, time limit) takes its
// nodes away. The job's own nodes are those of the allocation still in its
// node list (a node Slurm took away after a failure of an `--no-kill` job
// is gone). A node in several of these jobs counts once, for the first.
//
// `hvdrun slurm-hosts` prints them as a host discovery script does, one
// "node:slots" per line; the script hvd-slurm-discover beside hvdrun runs
// it. The Slurm launcher asks the same question to learn which job's
// allocation a worker step on a node belongs to.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"
#include "slurm/slurm_allocation.h"

namespace hvd::launcher {

inline constexpr char kSlurmHostsCommand[] = "slurm-hosts";
// The discovery script installed beside hvdrun; elastic jobs inside an
// allocation use it unless given hosts or another script.
inline constexpr char kSlurmDiscoveryScript[] = "hvd-slurm-discover";

struct SlurmJob {
  std::string id;
  int tasks = 0;
  int nodes = 0;
  std::vector<std::string> node_names;
};

// squeue's lines "JOBID NUMTASKS NUMNODES NODELIST" (SqueueJobsArgs' format).
common::Result<std::vector<SlurmJob>> ParseSqueueJobs(std::string_view text);

struct SlurmNode {
  HostSlots host;
  std::string job_id;
};

// The usable nodes: the allocation's own that are still in `own_now` (the
// job's node list now; nullopt: unknown, all of them), then the
// companions'.
std::vector<SlurmNode> UsableNodes(
    const SlurmAllocation& allocation,
    const std::optional<std::vector<std::string>>& own_now,
    const std::vector<SlurmJob>& companions);

// HVD_SLURM_GROW_NAME, else "hvd-grow-<job id>".
std::string GrowJobName(const SlurmAllocation& allocation,
                        const EnvLookup& env);

// Asks squeue (each run bounded by `timeout`) for the job's node list and
// its running companions.
common::Result<std::vector<SlurmNode>> QuerySlurmNodes(
    const SlurmAllocation& allocation, const std::string& grow_name,
    std::chrono::milliseconds timeout);

// The job whose allocation holds `node`: the allocation's own when it lists
// the node, else a companion's (asks squeue). kNotFound names the node.
common::Result<std::string> SlurmJobOfNode(const SlurmAllocation& allocation,
                                           const std::string& node,
                                           std::chrono::milliseconds timeout);

// Slurm's view of `nodes` from sinfo's lines "NODE|STATE|REASON": one
// line per node asked about, "node N: STATE (REASON)" (Slurm's state as
// sinfo writes it: a trailing "*" means the node does not answer
// slurmctld), or "node N: unknown to Slurm".
std::vector<std::string> DescribeSlurmNodes(
    const std::vector<std::string>& nodes, std::string_view sinfo_text);

// Asks sinfo about `nodes` (bounded by `timeout`) and describes them.
common::Result<std::vector<std::string>> QuerySlurmNodeStates(
    const std::vector<std::string>& nodes, std::chrono::milliseconds timeout);

// `hvdrun slurm-hosts`: prints the usable nodes; 1 with a message outside
// an allocation or when squeue fails.
int SlurmHostsMain(const std::vector<std::string>& args);

}  // namespace hvd::launcher
