// The elastic driver: runs a job whose set of workers changes while it
// trains (docs/design.md, "launcher/ (elastic mode)").
//
// It discovers hosts (the discovery script every --discovery-interval, or
// the fixed -H list), forms generations of slots (rank order: hosts in the
// order first seen, slots in local-rank order, capped at --max-np), starts a
// worker for every slot that has none, publishes each generation on the
// rendezvous server's ElasticBoard where workers check in, and pushes
// HostsUpdated to the running workers when the would-be assignment changes.
// A failed worker blacklists its host and a next generation forms from what
// is left. Same signal contract as RunJob (driver.h).
#pragma once

#include "launch_config.h"

namespace hvd::launcher {

int RunElasticJob(const LaunchConfig& config);

}  // namespace hvd::launcher
