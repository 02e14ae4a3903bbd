// How hvdrun reads its number flags: a whole number is digits with an
// optional minus sign and nothing around them; a decimal is finite (no nan,
// inf or hex); each flag has a range, and a value outside it is a usage
// error naming the value as typed and the range.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "hvd/common/tuning_defaults.h"

namespace hvd::launcher {

// Bounds of the number flags. Each keeps the value far from where a
// conversion could overflow, and within what the worker accepts from the
// environment variable the flag sets (runtime/src/config.cc).
inline constexpr int64_t kMaxProcesses = 65536;
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;  // a week
inline constexpr double kMaxDiscoverySeconds = 3600;
// Below this a discovery interval or timeout would be a busy loop.
inline constexpr double kMinDiscoverySeconds = 0.01;
inline constexpr int64_t kMaxCount = 1
                                     << 20;  // cache entries, autotune samples
inline constexpr double kMaxFusionMb = common::kMaxFusionThreshold >> 20;
inline constexpr double kMaxCycleMs = common::kMaxCycleTime.count();
inline constexpr int64_t kMaxResets = 1000000;

// The value as the user typed it, cut short if it is long, for messages.
std::string Quoted(const std::string& text);

// "" when `text` is a whole number in [min, max]; otherwise the reason,
// naming the value as typed and the range.
std::string CheckWholeNumber(const std::string& text, int64_t min, int64_t max);

// "" when `text` is a finite decimal number (fractions and exponents
// allowed) above `min` (or from `min`, when `min_included`) and at most
// `max`; otherwise the reason.
std::string CheckDecimal(const std::string& text, double min, bool min_included,
                         double max, const std::string& unit);

// The two checks above as CLI11 validators, and CPU core lists ("0,4").
CLI::Validator WholeNumber(int64_t min, int64_t max);
CLI::Validator Decimal(double min, bool min_included, double max,
                       const std::string& unit);
CLI::Validator CoreList();

// Whole seconds for the workers' environment and ssh (--start-timeout),
// rounded up so that a fraction never becomes 0.
std::chrono::seconds CeilSeconds(double seconds);
std::chrono::milliseconds Milliseconds(double seconds);

}  // namespace hvd::launcher
