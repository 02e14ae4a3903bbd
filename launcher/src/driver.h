// Driver: runs one static job from start to exit code.
//
// Starts the rendezvous server with a fresh job secret, places ranks, starts
// one guarded worker per rank (locally, or over ssh for remote hosts),
// relays their output, and waits. When a worker fails, the others are
// stopped (SIGTERM, SIGKILL after the grace period) and the exit code and
// message name the rank, host and exit code or signal. SIGINT, SIGTERM and
// SIGHUP to hvdrun are forwarded to every worker; a second one kills them.
//
// The caller must block SIGCHLD, SIGINT, SIGTERM and SIGHUP in every thread
// (block them in main before anything starts a thread): the driver takes
// them through a signalfd. Run() is called once, from the main thread.
#pragma once

#include "launch_config.h"

namespace hvd::launcher {

// The signals the driver handles; block them before any thread starts.
// Also ignores SIGPIPE in hvdrun (workers get the default back).
void BlockDriverSignals();

// Returns hvdrun's exit code: 0 when every worker exited 0; otherwise the
// first failed worker's exit code, or 128 + its signal.
int RunJob(const LaunchConfig& config);

}  // namespace hvd::launcher
