// The remote guard's loop for a worker that can be adopted (the launch
// message names a socket: remote_launch.h, adopt_socket.h).
//
// The worker's stdout and stderr come through the guard, which passes
// them on to whoever is attached: first hvdrun's ssh link, later an
// adopting hvdrun's socket connection (as frames). The guard listens on its
// socket from the start, and an adopter that connects replaces whatever
// was attached: it comes from the hvdrun that leads the job now. When the
// attached side ends or falls silent for the silence bound, the guard
// keeps the worker running and waits for an adopter for the adopt grace;
// the output of that time is kept up to kOrphanOutputBytes (its newest
// part) and handed to the adopter, with a line saying how much was
// dropped. sshd's SIGHUP is not passed on. Control bytes from the
// attached side are heartbeats and signals, as on the ssh link. A grace
// that runs out stops the worker (SIGTERM, SIGKILL after the stop grace),
// so nothing is orphaned for good. When the worker exits, the guard passes
// on what it has and exits with the worker's code; an adopter gets the
// code in an exit frame.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace hvd::launcher {

// Output kept while no hvdrun is attached.
inline constexpr size_t kOrphanOutputBytes = 256 * 1024;

struct AdoptableWorker {
  pid_t worker = 0;  // leads its own process group
  int out = -1;      // the read ends of its stdout and stderr pipes
  int err = -1;
  int signals = -1;     // the guard's signalfd (SIGCHLD, SIGTERM, ...)
  std::string control;  // control bytes read with the launch message
  std::string socket_path;
  std::chrono::milliseconds adopt_grace{0};
  std::chrono::milliseconds stop_grace{0};
  std::chrono::milliseconds silence{0};
};

[[noreturn]] void RunAdoptableGuard(AdoptableWorker worker);

}  // namespace hvd::launcher
