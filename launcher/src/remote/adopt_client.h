// The adopting end on a worker's host: `hvdrun --hvd-internal-adopt NAME`,
// which the hvdrun that leads a job next runs over ssh, as it would run a
// remote guard. It connects to the guard's socket (adopt_socket.h), passes
// its standard input (heartbeats and signals from the local guard) on to
// it, and writes the guard's frames to its stdout and stderr, so the new
// leader's guard and output relay see what the first hvdrun's saw. It exits
// with the worker's exit code; with 255 and a line on stderr when there is
// no worker to adopt (it ended, or its grace ran out) or the guard went
// away.
#pragma once

namespace hvd::launcher {

int AdoptMain(int argc, char** argv);

}  // namespace hvd::launcher
