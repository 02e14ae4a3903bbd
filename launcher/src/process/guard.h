// The worker guard: a small process (hvdrun re-executed in a hidden mode)
// between the driver and each worker.
//
// Local worker: the guard starts the worker in a process group of its own
// and owns that group: it forwards the signals the driver asks for (one
// byte per signal on the control pipe), kills what is left of the group
// when the worker exits, and, when the control pipe reaches end-of-file
// because the driver died (even by SIGKILL), stops the whole group:
// SIGTERM, then SIGKILL after the grace period. So no worker, nor anything
// it started, outlives hvdrun. The guard's child dies with the guard
// (DieWithGuard), so a guard killed on its own (the OOM killer) leaves no
// orphan worker. The guard exits with the worker's status (exit code, or
// the same signal).
//
// Remote worker: the guard's child is ssh, or srun inside a Slurm
// allocation (srun.h), whose remote command is the
// remote guard (remote_guard.h). The guard sends it the launch message
// (remote_launch.h, read from descriptor kGuardLaunchFd), then a heartbeat
// every second and the driver's signals as bytes on ssh's standard input.
// When the driver dies it closes that input: the remote guard stops the
// worker, ssh ends, and the guard kills ssh if it has not ended within the
// grace. The guard exits with ssh's status: the remote worker's exit code,
// 128 + its signal, or 255 when ssh lost the host.
//
// Adoptable worker on this machine: the guard's child is the remote guard
// itself, run here without ssh, in adoptable mode. It differs from a
// remote worker's in one thing: when the driver dies, the guard closes
// the remote guard's input and exits at once, leaving it to wait for an
// adopter (the remote guard clears the death signal DieWithGuard set), so
// the worker outlives hvdrun as a remote one does.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd::launcher {

// argv[1] of hvdrun in guard mode.
inline constexpr char kGuardFlag[] = "--hvd-internal-guard";
// File descriptor numbers of the control pipe and, for a remote worker, of
// the launch message in the guard.
inline constexpr int kGuardControlFd = 3;
inline constexpr int kGuardLaunchFd = 4;

enum class GuardMode { kLocal, kRemote, kAdoptableHere };

// The guard's command line: hvdrun_path kGuardFlag <grace ms> <mode> --
// command... (kLocal: the worker's; kRemote: ssh or srun, or the adopt
// client; kAdoptableHere: the remote guard, run here).
std::vector<std::string> GuardCommand(const std::string& hvdrun_path,
                                      std::chrono::milliseconds grace,
                                      GuardMode mode,
                                      const std::vector<std::string>& command);

// Entry point of guard mode; returns only on a usage error.
int GuardMain(int argc, char** argv);

}  // namespace hvd::launcher
