// Starts one worker for a slot: its environment, locally or over ssh,
// always under a guard. Shared by the static and the elastic driver.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "hvd/common/status.h"
#include "job/launch_config.h"
#include "job/worker_env.h"
#include "process/spawner.h"

namespace hvd::launcher {

struct LaunchContext {
  std::string hvdrun_path;  // re-executed as the guard
  std::string working_dir;  // remote workers cd here
  DriverEndpoint endpoint;
};

// Prepares what every launch needs; fails without hvdrun's own path or a
// readable working directory.
common::Result<LaunchContext> MakeLaunchContext(DriverEndpoint endpoint);

// Starts the worker of `slot`, hvdrun's process number `worker_id`
// (HVD_WORKER_ID), under a guard: locally, or over ssh under a remote guard.
// With --adopt-grace-seconds a worker here runs under the remote guard as
// well (without ssh), so it too can outlive this hvdrun and be adopted.
common::Result<WorkerProcess> LaunchWorker(const SlotAssignment& slot,
                                           int64_t worker_id,
                                           const LaunchContext& context,
                                           const LaunchConfig& config);

// Takes over the worker `worker_id` of `slot` that the last leader
// started (adoptable): a guard here runs `ssh host hvdrun
// --hvd-internal-adopt NAME` (remote/adopt_client.h), without ssh when the
// worker runs on this machine, which stands for the worker's guard from
// now on. ssh may take `connect_within` to connect (a reattach's window
// may have less left than the start timeout).
common::Result<WorkerProcess> AdoptWorker(
    const SlotAssignment& slot, int64_t worker_id, const LaunchContext& context,
    const LaunchConfig& config,
    std::optional<std::chrono::seconds> connect_within = std::nullopt);

}  // namespace hvd::launcher
