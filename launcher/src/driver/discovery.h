// Host discovery (elastic mode): runs the user's discovery script and reads
// the hosts it prints, one per line: "host" (with the default slots) or
// "host:slots". Blank lines are ignored; order is kept.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

// The whole output or an error naming the first bad line: a host listed
// twice, a malformed line or slot count. A rejected output changes nothing.
common::Result<std::vector<HostSlots>> ParseDiscoveryOutput(
    const std::string& output, int default_slots);

// Runs `script` (an executable path, no shell) in its own process group,
// killing the group if it runs past `timeout`, or as soon as `cancel_fd`
// (if not -1) becomes readable (then kAborted). A non-zero exit, a timeout
// or bad output is an error naming the script and including its stderr.
common::Result<std::vector<HostSlots>> RunDiscovery(
    const std::string& script, int default_slots,
    std::chrono::milliseconds timeout, int cancel_fd = -1);

}  // namespace hvd::launcher
