// Logging setup. Every hvd process calls InitLogging once at start-up with
// its role ("driver", "worker") and rank; every line then carries both, so
// interleaved output of many processes can be told apart.
#pragma once

#include <chrono>
#include <cstdint>
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
// HOROVOD_LOG_LEVEL (default warning). rank < 0 prints "-". The time is left
// out with HOROVOD_LOG_HIDE_TIME=1 (hvdrun --log-without-timestamp), for
// these lines and Announce()'s. Returns an error for a malformed level (the
// logger is still set up, at the default level). Safe to call again (e.g.
// when an elastic reset changes the rank), also while other threads log:
// the logger stays the same object.
Status InitLogging(const std::string& role, int rank);

// Whether log lines and Announce() lines start with the time; overrides
// what InitLogging read from HOROVOD_LOG_HIDE_TIME (hvdrun's
// --log-with-timestamp / --log-without-timestamp). Any thread.
void SetLogTime(bool with_time);

// A line for the user, printed to stderr whatever the log level:
// "[time] <line>" (hvdrun's "hvdrun: ..." messages), or "<line>" alone when
// the time is hidden. The time is the log lines' ("[%Y-%m-%d
// %H:%M:%S.%e]", local). Any thread; lines never interleave.
void Announce(const std::string& line);

// "600", "1.5", "0.25": a duration in seconds for messages, with no more
// decimals than it has (its milliseconds at most).
std::string DecimalSeconds(std::chrono::milliseconds duration);

// "1 worker", "2 workers", "0 workers": a count and its noun for messages;
// `many` when the plural is not `one` + "s".
std::string Count(int64_t n, const std::string& one,
                  const std::string& many = "");

}  // namespace hvd::common
