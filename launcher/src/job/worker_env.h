// The environment and command line of one worker.
#pragma once

#include <cstdint>
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
  // The etcd backend: the job signing key's public half
  // (common/job_signing_key.h), with which workers check hvdrun's address.
  std::string job_public_key;
};

// Horovod's variable names for the slot's place in the job, the rendezvous
// endpoint, the tuning knobs, the process's id (HVD_WORKER_ID) and own key
// (HVD_WORKER_KEY, never on a command line), with the etcd backend its
// prefix and the job's public key (and a static job's generations key,
// common/worker_key.h), and -x's variables. Never the job secret.
EnvList WorkerEnvironment(const SlotAssignment& slot, int64_t worker_id,
                          const DriverEndpoint& driver,
                          const LaunchConfig& config);

// Quotes `word` for a POSIX shell.
std::string ShellQuote(const std::string& word);
// Each word quoted, joined by spaces.
std::string ShellWords(const std::vector<std::string>& words);

}  // namespace hvd::launcher
