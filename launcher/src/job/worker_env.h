// The environment and command line of one worker.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "job/assignment.h"
#include "job/launch_config.h"

namespace hvd::launcher {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct DriverEndpoint {
  std::string address;  // rendezvous server, as workers reach it
  int port = 0;
  std::string secret;
};

// Horovod's variable names for the slot's place in the job, the rendezvous
// endpoint, the tuning knobs, HVD_SECRET_KEY (never on a command line), and
// -x's variables.
EnvList WorkerEnvironment(const SlotAssignment& slot,
                          const DriverEndpoint& driver,
                          const LaunchConfig& config);

// Quotes `word` for a POSIX shell.
std::string ShellQuote(const std::string& word);
// Each word quoted, joined by spaces.
std::string ShellWords(const std::vector<std::string>& words);

}  // namespace hvd::launcher
