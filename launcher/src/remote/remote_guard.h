// The remote guard: hvdrun re-executed on a remote host by ssh, between
// sshd and the worker (the local side is guard.h).
//
// It reads the launch message (remote_launch.h) from its standard input
// within the start timeout, enters the working directory and starts the
// worker in a process group of its own, with the login's environment
// overridden by the message's. Then it reads control bytes: heartbeats and
// signals for the group. When its input ends (hvdrun, its guard or the ssh
// connection is gone) or stays silent for the silence bound (the link is
// down: a partition), it stops the group: SIGTERM, then SIGKILL after the
// grace. So no remote worker outlives its driver, its connection, or a
// partition longer than the bound; and none outlives the remote guard
// itself (DieWithGuard). It exits with the worker's exit code or
// 128 + its signal, which ssh hands back. A worker whose job can be
// adopted (the message names a socket) is kept instead when the link
// ends, for the hvdrun that leads the job next (adoptable_guard.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd::launcher {

inline constexpr char kRemoteGuardFlag[] = "--hvd-internal-remote-guard";

// The remote guard's command line (ssh runs it as "exec <words, quoted>",
// srun as it is).
std::vector<std::string> RemoteGuardArgv(
    const std::string& hvdrun_path, std::chrono::milliseconds grace,
    std::chrono::milliseconds silence, std::chrono::milliseconds start_timeout);

// Entry point of remote guard mode.
int RemoteGuardMain(int argc, char** argv);

}  // namespace hvd::launcher
