// The command line that runs a command on another host: over ssh, or as a
// step of the Slurm allocation (--launcher). Shared by the host check and
// every remote worker.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

// ssh's or srun's argv running `words` on `host` ("exec" and the quoted
// words as ssh's remote command line; the words themselves after srun's
// options). Fails for --launcher local, and for a node in no job of the
// allocation (slurm_jobs.h).
common::Result<std::vector<std::string>> RemoteCommand(
    const std::string& host, const std::vector<std::string>& words,
    const std::string& step_name, const LaunchConfig& config);

// "ssh" or "srun", for messages.
const char* RemoteTool(const LaunchConfig& config);

}  // namespace hvd::launcher
