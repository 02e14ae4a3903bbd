// The remote guard: hvdrun re-executed on a remote host by ssh (or as a
// Slurm step by srun), between sshd (slurmstepd) and the worker (the local
// side is guard.h).
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
#include <optional>
#include <string>
#include <vector>

namespace hvd::launcher {

inline constexpr char kRemoteGuardFlag[] = "--hvd-internal-remote-guard";

// What launch message a guard takes, which its command line says (a
// command line is what Slurm authenticates; the step's input is not):
//   no seal words      a plain message only (over ssh, which encrypts, and
//                      the adoptable guard run here through a pipe);
//   "munge <socket>"   a MUNGE-sealed one only (a Slurm step: srun carries
//                      its input in clear), decoded through munged at
//                      <socket>, "-" for libmunge's default. A plain
//                      message is refused, so no one who can write to the
//                      step's input can start a worker with text of theirs.
// A message of the other kind is refused, naming both.
inline constexpr char kMungeSealWord[] = "munge";
inline constexpr char kDefaultMungeSocketWord[] = "-";

// The remote guard's command line (ssh runs it as "exec <words, quoted>",
// srun as it is). `munge_socket`: nullopt, plain; else sealed through that
// socket (empty: libmunge's default).
std::vector<std::string> RemoteGuardArgv(
    const std::string& hvdrun_path, std::chrono::milliseconds grace,
    std::chrono::milliseconds silence, std::chrono::milliseconds start_timeout,
    const std::optional<std::string>& munge_socket = std::nullopt);

// Entry point of remote guard mode.
int RemoteGuardMain(int argc, char** argv);

}  // namespace hvd::launcher
