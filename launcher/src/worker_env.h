// The environment and command line of one worker.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "assignment.h"
#include "launch_config.h"

namespace hvd::launcher {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct DriverEndpoint {
  std::string address;  // rendezvous server, as workers reach it
  int port = 0;
  std::string secret;
};

// Horovod's variable names for the slot's place in the job, the rendezvous
// endpoint, the tuning knobs, and HVD_SECRET_KEY (the only place the secret
// travels: never a command line).
EnvList WorkerEnvironment(const SlotAssignment& slot,
                          const DriverEndpoint& driver,
                          const LaunchConfig& config);

// The ssh command that runs `config.command` on `slot.host` with `env`.
// Everything but the secret goes on the remote command line; the remote
// shell reads HVD_SECRET_KEY from ssh's standard input first, so the secret
// never shows in a process list. ssh never prompts (BatchMode), gives up
// connecting after config.start_timeout, and ends when the connected link
// stops answering its keep-alives.
std::vector<std::string> SshCommand(const SlotAssignment& slot,
                                    const EnvList& env,
                                    const LaunchConfig& config,
                                    const std::string& working_dir);

// Quotes `word` for a POSIX shell.
std::string ShellQuote(const std::string& word);

}  // namespace hvd::launcher
