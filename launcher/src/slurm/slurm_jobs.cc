#include "slurm/slurm_jobs.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "policy/exit_status.h"
#include "process/bounded_run.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

// Each squeue run: a stuck slurmctld must not hold hvdrun longer.
constexpr std::chrono::milliseconds kSlurmHostsTimeout{10000};

// Runs one of Slurm's query commands (squeue, sinfo) to its end.
Result<std::string> RunSlurmQuery(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout) {
  BoundedRunOptions options;
  options.timeout = timeout;
  options.search_path = true;
  auto run = RunBounded(argv, options);
  if (!run.ok()) {
    return run.status().WithContext("cannot run " + argv[0] +
                                    " (is Slurm's client installed on this "
                                    "node?)");
  }
  if (run->timed_out) {
    return Status::Timeout(argv[0] + " gave no answer within " +
                           std::to_string(timeout.count() / 1000) +
                           " s: is slurmctld reachable?");
  }
  if (!WIFEXITED(run->wait_status) || WEXITSTATUS(run->wait_status) != 0) {
    return Status::Transport(argv[0] + " " + DescribeExit(run->wait_status) +
                             ": " + run->stderr_text);
  }
  return run->stdout_text;
}

}  // namespace

Result<std::vector<SlurmJob>> ParseSqueueJobs(std::string_view text) {
  std::vector<SlurmJob> jobs;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    SlurmJob job;
    std::string list;
    if (!(words >> job.id)) continue;  // a blank line
    if (!(words >> job.tasks >> job.nodes >> list) || job.tasks < 0 ||
        job.nodes < 1) {
      return Status::InvalidArgument("unexpected squeue line '" + line + "'");
    }
    auto names = ExpandHostList(list);
    if (!names.ok()) return names.status().WithContext("squeue");
    job.node_names = std::move(*names);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<SlurmNode> UsableNodes(
    const SlurmAllocation& allocation,
    const std::optional<std::vector<std::string>>& own_now,
    const std::vector<SlurmJob>& companions) {
  std::vector<SlurmNode> nodes;
  std::set<std::string> seen;
  for (const HostSlots& node : allocation.nodes) {
    if (own_now && std::find(own_now->begin(), own_now->end(), node.host) ==
                       own_now->end()) {
      continue;
    }
    if (seen.insert(node.host).second) {
      nodes.push_back({node, allocation.job_id});
    }
  }
  for (const SlurmJob& job : companions) {
    if (job.id == allocation.job_id) continue;
    const int slots = std::max(1, job.tasks / job.nodes);
    for (const std::string& name : job.node_names) {
      if (seen.insert(name).second) nodes.push_back({{name, slots}, job.id});
    }
  }
  return nodes;
}

std::string GrowJobName(const SlurmAllocation& allocation,
                        const EnvLookup& env) {
  auto name = env("HVD_SLURM_GROW_NAME");
  if (name && !name->empty()) return *name;
  return "hvd-grow-" + allocation.job_id;
}

Result<std::vector<SlurmNode>> QuerySlurmNodes(
    const SlurmAllocation& allocation, const std::string& grow_name,
    std::chrono::milliseconds timeout) {
  // Widths wide enough that nothing is cut: squeue pads, never splits.
  const std::string format = "JobID:64,NumTasks:12,NumNodes:12,NodeList:65536";
  auto own =
      RunSlurmQuery({"squeue", "--noheader", "--jobs=" + allocation.job_id,
                     "--Format=" + format},
                    timeout);
  if (!own.ok()) return own.status();
  auto own_jobs = ParseSqueueJobs(*own);
  if (!own_jobs.ok()) return own_jobs.status();
  std::optional<std::vector<std::string>> own_now;
  if (!own_jobs->empty()) own_now = own_jobs->front().node_names;
  auto others =
      RunSlurmQuery({"squeue", "--noheader", "--me", "--states=RUNNING",
                     "--name=" + grow_name, "--Format=" + format},
                    timeout);
  if (!others.ok()) return others.status();
  auto companions = ParseSqueueJobs(*others);
  if (!companions.ok()) return companions.status();
  return UsableNodes(allocation, own_now, *companions);
}

Result<std::string> SlurmJobOfNode(const SlurmAllocation& allocation,
                                   const std::string& node,
                                   std::chrono::milliseconds timeout) {
  for (const HostSlots& own : allocation.nodes) {
    if (own.host == node) return allocation.job_id;
  }
  const std::string grow_name = GrowJobName(allocation, ProcessEnvironment());
  auto nodes = QuerySlurmNodes(allocation, grow_name, timeout);
  if (!nodes.ok()) return nodes.status();
  for (const SlurmNode& usable : *nodes) {
    if (usable.host.host == node) return usable.job_id;
  }
  return Status::NotFound("node " + node +
                          " is neither in the allocation of "
                          "job " +
                          allocation.job_id + " nor in a running job named '" +
                          grow_name + "'");
}

std::vector<std::string> DescribeSlurmNodes(
    const std::vector<std::string>& nodes, std::string_view sinfo_text) {
  std::map<std::string, std::string> seen;
  std::istringstream lines{std::string(sinfo_text)};
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find('|');
    const size_t second = line.find('|', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string state = line.substr(first + 1, second - first - 1);
    std::string reason = line.substr(second + 1);
    if (!reason.empty() && reason != "none") state += " (" + reason + ")";
    seen.emplace(line.substr(0, first), state);
  }
  std::vector<std::string> described;
  for (const std::string& node : nodes) {
    auto it = seen.find(node);
    described.push_back("node " + node + ": " +
                        (it == seen.end() ? "unknown to Slurm" : it->second));
  }
  return described;
}

Result<std::vector<std::string>> QuerySlurmNodeStates(
    const std::vector<std::string>& nodes, std::chrono::milliseconds timeout) {
  std::string list;
  for (const std::string& node : nodes) {
    list += (list.empty() ? "" : ",") + node;
  }
  auto text = RunSlurmQuery(
      {"sinfo", "--noheader", "--Node", "--nodes=" + list, "--format=%N|%T|%E"},
      timeout);
  if (!text.ok()) return text.status();
  return DescribeSlurmNodes(nodes, *text);
}

int SlurmHostsMain(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr,
                 "usage: hvdrun slurm-hosts\n"
                 "Prints the nodes of this Slurm job and of its running "
                 "companion jobs (named $HVD_SLURM_GROW_NAME, default "
                 "hvd-grow-<job id>) as 'node:slots' lines.\n");
    return 2;
  }
  auto allocation = AllocationFromEnvironment(ProcessEnvironment());
  if (!allocation.ok()) {
    std::fprintf(stderr, "hvdrun slurm-hosts: %s\n",
                 allocation.status().message().c_str());
    return 1;
  }
  if (!allocation->has_value()) {
    std::fprintf(stderr,
                 "hvdrun slurm-hosts: not inside a Slurm allocation "
                 "(SLURM_JOB_ID is unset): run it from sbatch or salloc\n");
    return 1;
  }
  const SlurmAllocation& own = **allocation;
  auto nodes = QuerySlurmNodes(own, GrowJobName(own, ProcessEnvironment()),
                               kSlurmHostsTimeout);
  if (!nodes.ok()) {
    std::fprintf(stderr, "hvdrun slurm-hosts: %s\n",
                 nodes.status().message().c_str());
    return 1;
  }
  for (const SlurmNode& node : *nodes) {
    std::printf("%s:%d\n", node.host.host.c_str(), node.host.slots);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace hvd::launcher
