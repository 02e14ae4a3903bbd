// Logging setup. Every hvd process calls InitLogging once at start-up with
// its role ("driver", "worker") and rank; every line then carries both, so
// interleaved output of many processes can be told apart.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "hvd/common/status.h"

namespace hvd::common {

// Parses trace, debug, info, warning (warn), error, fatal (critical), off.
Result<spdlog::level::level_enum> ParseLogLevel(const std::string& text,
                                                const std::string& what);

// Sets spdlog's default logger to stderr with the pattern
// "[time] [role rank] [level] message" and the level from HVD_LOG_LEVEL or
// HOROVOD_LOG_LEVEL (default warning). rank < 0 prints "-". Returns an error
// for a malformed level (the logger is still set up, at the default level).
// Safe to call again (e.g. when an elastic reset changes the rank), also
// while other threads log: the logger stays the same object.
Status InitLogging(const std::string& role, int rank);

}  // namespace hvd::common
