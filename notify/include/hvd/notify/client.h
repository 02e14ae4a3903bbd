// The driver's side: pushes a signed HostsUpdated to one worker.
#pragma once

#include <chrono>
#include <string>

#include "hvd/common/status.h"
#include "hvd/notify/messages.h"

namespace hvd::notify {

// `address` is what the worker registered ("<host>:<port>"). One attempt
// per transport error retry budget of `timeout`; a worker that is gone is a
// kTransport status, which the driver logs and moves past.
common::Status SendHostsUpdated(const std::string& address,
                                const std::string& secret,
                                const HostsUpdated& message,
                                std::chrono::milliseconds timeout);

common::Status SendAbort(const std::string& address, const std::string& secret,
                         const Abort& message,
                         std::chrono::milliseconds timeout);

// Ok when the worker's notification server answered within `timeout`, in
// one attempt (the caller's probing repeats).
common::Status Ping(const std::string& address, const std::string& secret,
                    std::chrono::milliseconds timeout);

}  // namespace hvd::notify
