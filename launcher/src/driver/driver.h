// The driver: runs one job, static or elastic, from start to exit code.
//
// It starts the rendezvous server with a fresh job secret and then carries
// out what JobPolicy (job_policy.h) decides: it starts one guarded worker
// per slot (locally, or over ssh for remote hosts), relays their output,
// publishes generations on the rendezvous board, pushes HostsUpdated and
// Abort to workers' notification servers and probes their liveness. It is
// the policy's thin I/O shell: one thread that waits in poll() on a
// signalfd and an eventfd (woken by discovery results, check-ins and the
// answers of pushes and probes) until the policy's next deadline, never
// longer and never spinning.
//
// SIGINT, SIGTERM and SIGHUP to hvdrun are forwarded to every worker; a
// second one kills them. The caller must block SIGCHLD, SIGINT, SIGTERM and
// SIGHUP in every thread (BlockDriverSignals in main before anything starts
// a thread). RunJob is called once, from the main thread.
#pragma once

#include "job/launch_config.h"

namespace hvd::launcher {

// The signals the driver handles; block them before any thread starts.
// Also ignores SIGPIPE in hvdrun (workers get the default back).
void BlockDriverSignals();

// Returns hvdrun's exit code: 0 when the job succeeded; otherwise the last
// failed worker's exit code (or 128 + its signal), 128 + the signal that
// stopped hvdrun, or 1.
int RunJob(const LaunchConfig& config);

}  // namespace hvd::launcher
