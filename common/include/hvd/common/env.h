// Typed readers of environment variables. Each rejects a malformed value with
// a Status that names the variable, the value and what was expected, so a
// typo in a job script is an error at start-up rather than a silent default.
//
// Only the edges of the program (RuntimeConfig::FromEnv, the launcher's CLI)
// call these; everything below them receives plain structs.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::common {

// The value, or nullopt when the variable is unset. An empty value counts as
// unset, as in Horovod.
std::optional<std::string> GetEnv(const char* name);

std::string GetEnvString(const char* name, const std::string& fallback);

// Decimal integer within [min, max].
Result<int64_t> GetEnvInt(const char* name, int64_t fallback,
                          int64_t min = INT64_MIN, int64_t max = INT64_MAX);

// 1/0, true/false, yes/no, on/off (any case).
Result<bool> GetEnvBool(const char* name, bool fallback);

// Non-negative seconds, fractions allowed ("2", "0.5").
Result<std::chrono::milliseconds> GetEnvSeconds(
    const char* name, std::chrono::milliseconds fallback);

// `text` without the spaces, tabs, carriage returns and newlines at its
// ends (a line of a file or of a program's output, before it is parsed).
std::string_view TrimBlanks(std::string_view text);

// Parsers behind the readers, usable on any string (CLI values, tests).
// `what` names the source in the error message.
Result<int64_t> ParseInt(const std::string& text, const std::string& what,
                         int64_t min = INT64_MIN, int64_t max = INT64_MAX);
Result<bool> ParseBool(const std::string& text, const std::string& what);
Result<std::chrono::milliseconds> ParseSeconds(const std::string& text,
                                               const std::string& what);

}  // namespace hvd::common
