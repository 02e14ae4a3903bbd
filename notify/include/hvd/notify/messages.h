// The driver's messages to workers (elastic mode) and their JSON form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::notify {

inline constexpr char kHostsUpdatedPath[] = "/v1/notify/hosts_updated";
inline constexpr char kAbortPath[] = "/v1/notify/abort";
// Liveness: answered by the server thread whatever the worker's Python is
// doing, so only a hung (stopped, wedged) process leaves it unanswered.
inline constexpr char kPingPath[] = "/v1/notify/ping";

// Discovery changed the would-be assignment. `sequence` grows with every
// update of the job; workers compare sequences, never clocks.
struct HostsUpdated {
  int64_t generation = 0;  // the generation the update leads to
  int64_t sequence = 0;
  std::vector<std::string> added;    // hosts
  std::vector<std::string> removed;  // hosts
};

std::string Encode(const HostsUpdated& message);
common::Result<HostsUpdated> DecodeHostsUpdated(const std::string& json);

// A worker of `generation` exited unexpectedly: the others stop waiting on
// their peers now rather than at the Gloo timeout.
struct Abort {
  int64_t generation = 0;
  std::string reason;
};

std::string Encode(const Abort& message);
common::Result<Abort> DecodeAbort(const std::string& json);

}  // namespace hvd::notify
