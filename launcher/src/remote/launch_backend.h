// A launch back-end: how hvdrun starts a process (a worker's guard, the
// host check) on a host of the job, one per --launcher value, as Horovod's
// runner keeps its ways of launching apart. `local` starts everything on
// this machine (launch_backend.cc), `ssh` reaches other hosts over ssh
// (ssh.cc), `slurm` starts every process as a step of the allocation, this
// node's too (srun.cc). Stateless: any thread may use one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

class LaunchBackend {
 public:
  virtual ~LaunchBackend() = default;

  // Whether a process for `host` starts here as hvdrun's child, without
  // the back-end's tool: the host is this machine and the back-end does
  // not insist on its tool (srun does: a step is how Slurm accounts).
  virtual bool RunsHere(const std::string& host) const = 0;

  // The argv that runs `words` on `host` through the tool; `step_name`
  // names it where the tool shows names (Slurm's steps). Fails for a host
  // the back-end cannot reach, saying why.
  virtual common::Result<std::vector<std::string>> Command(
      const std::string& host, const std::vector<std::string>& words,
      const std::string& step_name) const = 0;

  // How a worker's launch message crosses the tool: nullopt, in plain
  // (ssh encrypts it); else sealed with MUNGE through munged's socket at
  // that path (empty: libmunge's default), because the tool carries it in
  // clear (srun). The guard's command line says the same (remote_guard.h).
  virtual std::optional<std::string> MungeSealSocket() const {
    return std::nullopt;
  }

  // The tool, for messages: "ssh", "srun".
  virtual const char* tool() const = 0;
};

// The back-end config.launcher names; it reads `config`, which must
// outlive it.
std::unique_ptr<LaunchBackend> MakeLaunchBackend(const LaunchConfig& config);

}  // namespace hvd::launcher
