// The worker guard: a small process (hvdrun re-executed in a hidden mode)
// between the driver and each worker.
//
// It starts the worker in a process group of its own and owns that group:
// it forwards the signals the driver asks for (one byte per signal on the
// control pipe), kills what is left of the group when the worker exits, and,
// when the control pipe reaches end-of-file because the driver died (even
// by SIGKILL), stops the whole group: SIGTERM, then SIGKILL after the grace
// period. So no worker, nor anything it started, outlives hvdrun. The guard
// exits with the worker's status (exit code, or the same signal).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd::launcher {

// argv[1] of hvdrun in guard mode.
inline constexpr char kGuardFlag[] = "--hvd-internal-guard";
// File descriptor number of the control pipe in the guard.
inline constexpr int kGuardControlFd = 3;

// The guard's command line: hvdrun_path kGuardFlag <grace ms> <stdin mode>
// -- command... With secret_on_stdin, the guard writes HVD_SECRET_KEY from
// its environment, then a newline, to the worker's standard input (for ssh).
std::vector<std::string> GuardCommand(const std::string& hvdrun_path,
                                      std::chrono::milliseconds grace,
                                      bool secret_on_stdin,
                                      const std::vector<std::string>& command);

// Entry point of guard mode; returns only on a usage error.
int GuardMain(int argc, char** argv);

}  // namespace hvd::launcher
