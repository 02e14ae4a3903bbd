// Starts one worker guard (see guard.h) with its output on pipes.
// Called from the driver's main thread only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/assignment.h"
#include "job/worker_env.h"

namespace hvd::launcher {

struct WorkerProcess {
  SlotAssignment slot;
  pid_t pid = -1;       // the guard
  int control_fd = -1;  // write one byte per signal to forward
  int stdout_fd = -1;   // read ends of the worker's output
  int stderr_fd = -1;
  // Its remote guard keeps it for an hvdrun that leads the job next
  // (--adopt-grace-seconds; remote/adoptable_guard.h).
  bool adoptable = false;
};

// fork + exec of `argv` with this process's environment plus `env` (which
// wins). Between fork and exec the child only calls async-signal-safe
// functions: the driver has threads, whose locks a forked child must not
// touch. Every descriptor but 0-2 and the control pipe is closed in it;
// with `launch_message`, the guard reads it from kGuardLaunchFd (a memory
// file: it is on no command line and in no environment).
common::Result<WorkerProcess> SpawnGuard(
    const SlotAssignment& slot, const std::vector<std::string>& argv,
    const EnvList& env, const std::string& launch_message = "");

// The path of the running hvdrun executable (to re-execute as a guard).
common::Result<std::string> SelfExecutable();

}  // namespace hvd::launcher
