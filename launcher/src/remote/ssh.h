// How hvdrun reaches another host: the ssh client's command line, shared by
// the pre-launch host check and every remote worker.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "job/launch_config.h"
#include "remote/launch_backend.h"

namespace hvd::launcher {

// ssh's liveness check of a connected link: a keep-alive every interval;
// after this many unanswered ones ssh gives up and exits (code 255). A
// partitioned host is thereby seen within interval * max to
// interval * (max + 1): 2-3 s.
inline constexpr std::chrono::seconds kSshAliveInterval{1};
inline constexpr int kSshAliveCountMax = 2;

// `ssh <options> -- host`, to which the caller appends the remote command.
// ssh never prompts (BatchMode), gives up connecting after
// config.start_timeout, ends when the connected link stops answering its
// keep-alives, and takes hvdrun's -p and -i. Host keys are checked as the
// user's ssh configuration says (StrictHostKeyChecking is theirs), unless
// --ssh-accept-new-host-keys lets ssh record a host it has not seen.
std::vector<std::string> SshArgs(const std::string& host,
                                 const LaunchConfig& config);

// --launcher ssh: a process for this machine starts here; one for any
// other host runs `exec <words>` through SshArgs.
std::unique_ptr<LaunchBackend> MakeSshBackend(const LaunchConfig& config);

}  // namespace hvd::launcher
