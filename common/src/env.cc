#include "hvd/common/env.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hvd::common {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string GetEnvString(const char* name, const std::string& fallback) {
  return GetEnv(name).value_or(fallback);
}

std::string_view TrimBlanks(std::string_view text) {
  constexpr std::string_view kBlanks = " \t\r\n";
  const size_t begin = text.find_first_not_of(kBlanks);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kBlanks) - begin + 1);
}

Result<int64_t> ParseInt(const std::string& text, const std::string& what,
                         int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      std::isspace(static_cast<unsigned char>(text[0]))) {
    return Status::InvalidArgument(what + "='" + text +
                                   "' is not a decimal integer");
  }
  if (parsed < min || parsed > max) {
    return Status::InvalidArgument(what + "=" + text + " is out of range [" +
                                   std::to_string(min) + ", " +
                                   std::to_string(max) + "]");
  }
  return static_cast<int64_t>(parsed);
}

Result<bool> ParseBool(const std::string& text, const std::string& what) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") {
    return true;
  }
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") {
    return false;
  }
  return Status::InvalidArgument(
      what + "='" + text + "' is not a boolean (use 1/0, true/false, yes/no)");
}

Result<std::chrono::milliseconds> ParseSeconds(const std::string& text,
                                               const std::string& what) {
  errno = 0;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      !std::isfinite(seconds) || seconds < 0 ||
      std::isspace(static_cast<unsigned char>(text[0]))) {
    return Status::InvalidArgument(what + "='" + text +
                                   "' is not a non-negative number of seconds");
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000.0));
}

Result<int64_t> GetEnvInt(const char* name, int64_t fallback, int64_t min,
                          int64_t max) {
  auto value = GetEnv(name);
  if (!value) return fallback;
  return ParseInt(*value, std::string("environment variable ") + name, min,
                  max);
}

Result<bool> GetEnvBool(const char* name, bool fallback) {
  auto value = GetEnv(name);
  if (!value) return fallback;
  return ParseBool(*value, std::string("environment variable ") + name);
}

Result<std::chrono::milliseconds> GetEnvSeconds(
    const char* name, std::chrono::milliseconds fallback) {
  auto value = GetEnv(name);
  if (!value) return fallback;
  return ParseSeconds(*value, std::string("environment variable ") + name);
}

}  // namespace hvd::common
