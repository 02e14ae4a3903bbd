// Runs the host check (host_check.h) of one host, and is its remote end.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hvd/common/network_interfaces.h"
#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

using common::NetworkInterface;

// ssh's own ConnectTimeout is the start timeout; the whole check (connect,
// authentication, the remote hvdrun) is killed this much later.
inline constexpr std::chrono::seconds kHostCheckKillMargin{2};

// The interfaces of `host`, or the message that says why it cannot run
// workers. Where the launch back-end runs the host's processes here
// (LaunchBackend::RunsHere), its interfaces are read directly. Any other
// (every host under --launcher slurm, as a step) runs `hvdrun_path`
// kHostCheckFlag through the back-end's command (over ssh: BatchMode, -p,
// -i, ConnectTimeout = --start-timeout), killed after start_timeout +
// kHostCheckKillMargin, or at once when `cancel_fd` becomes readable.
// Blocks; runs on one of the driver's errand threads.
common::Result<std::vector<NetworkInterface>> RunHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd);

// The remote part of RunHostCheck (through the back-end's tool), for any
// host name.
common::Result<std::vector<NetworkInterface>> RunRemoteHostCheck(
    const std::string& host, const std::string& hvdrun_path,
    const LaunchConfig& config, int cancel_fd);

// hvdrun kHostCheckFlag: prints this machine's answer to stdout; returns
// the exit code (0).
int HostCheckMain();

}  // namespace hvd::launcher
