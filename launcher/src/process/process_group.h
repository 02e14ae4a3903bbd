// What both guards (guard.h, remote_guard.h) do with the process group
// they own, and their waits.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace hvd::launcher {

// `sig` to the whole group; a stopped (SIGSTOP, hung) worker would keep a
// SIGTERM pending until the grace ends, so SIGCONT follows any signal but
// SIGKILL and SIGCONT, as a shell's kill does.
void SignalGroup(pid_t leader, int sig);

// In a worker's process before exec: no signal blocked, and SIGPIPE,
// SIGINT and SIGTERM at their default action, whatever hvdrun inherited. A
// shell ignores SIGINT in what it starts in the background (`hvdrun ... &`
// in a script), and a process cannot catch a signal ignored when it
// started, so without this neither the signals hvdrun passes on (SIGINT:
// Python's KeyboardInterrupt) nor a shell's trap would reach the worker.
void ResetWorkerSignals();

// In a guard's child between fork and exec: the kernel kills this process
// (SIGKILL) when `guard` dies, even by SIGKILL (the OOM killer's choice),
// which leaves no one to stop it; ends at once if `guard` is already gone.
// A worker never outlives its guard, and ssh or srun never outlive theirs,
// so the remote guard, its input closed, stops the remote worker. SIGKILL:
// with the guard gone, no one would enforce a SIGTERM's grace.
void DieWithGuard(pid_t guard);

// Ends this process as the waited-for one ended: the same exit code, or
// death by the same signal.
[[noreturn]] void ExitLike(int wait_status);

// Milliseconds from now until `when` for poll(): 0 if it passed, at most
// an hour.
int MillisUntil(std::chrono::steady_clock::time_point when);

}  // namespace hvd::launcher
