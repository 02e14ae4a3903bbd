#include "hvd/common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <mutex>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"

namespace hvd::common {

namespace {

// The one place the time of hvd's own lines is spelled.
constexpr char kTimePattern[] = "[%Y-%m-%d %H:%M:%S.%e] ";

// What the patterns are made of; guarded by PatternMu().
struct PatternState {
  std::string tag = "-";
  bool with_time = true;
};

std::mutex& PatternMu() {
  static std::mutex mu;
  return mu;
}

PatternState& Patterns() {
  static PatternState state;
  return state;
}

// Announce()'s logger: every level, its own sink (a pattern belongs to a
// sink), flushed at once. Made once and never destroyed: a thread may
// announce while the process exits.
spdlog::logger& AnnounceLogger() {
  static spdlog::logger* logger = [] {
    auto* made = new spdlog::logger(
        "hvd-announce", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_level(spdlog::level::trace);
    made->flush_on(spdlog::level::trace);
    made->set_pattern(std::string(kTimePattern) + "%v");
    return made;
  }();
  return *logger;
}

// Sets both patterns from Patterns(); called with PatternMu() held.
void ApplyPatterns(spdlog::logger* main) {
  const PatternState& state = Patterns();
  const std::string time = state.with_time ? kTimePattern : "";
  if (main) main->set_pattern(time + "[" + state.tag + "] [%l] %v");
  AnnounceLogger().set_pattern(time + "%v");
}

}  // namespace

Result<spdlog::level::level_enum> ParseLogLevel(const std::string& text,
                                                const std::string& what) {
  static const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace},    {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},      {"warning", spdlog::level::warn},
      {"warn", spdlog::level::warn},      {"error", spdlog::level::err},
      {"fatal", spdlog::level::critical}, {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(c)));
  for (const auto& [name, level] : kLevels) {
    if (lower == name) return level;
  }
  return Status::InvalidArgument(
      what + "='" + text +
      "' is not a log level (trace, debug, info, warning, error, fatal, off)");
}

Status InitLogging(const std::string& role, int rank) {
  // Made once per process; later calls (a worker's rank changes at every
  // elastic reset) change its pattern and level in place. Replacing the
  // default logger would free it under a thread logging through it
  // (spdlog::warn uses it by raw pointer): an Abort's warning on the
  // notification server's thread during hvd.init() crashed a worker so.
  auto logger = spdlog::default_logger();
  if (!logger || logger->name() != "hvd") {
    logger = std::make_shared<spdlog::logger>(
        "hvd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  }
  // HOROVOD_LOG_HIDE_TIME=1 (hvdrun --log-without-timestamp): no time.
  auto hide_time = GetEnvBool(env_vars::kLogHideTime, false);
  {
    std::lock_guard<std::mutex> lock(PatternMu());
    Patterns().tag = role + " " + (rank < 0 ? "-" : std::to_string(rank));
    Patterns().with_time = !hide_time.ok() || !*hide_time;
    ApplyPatterns(logger.get());
  }
  spdlog::level::level_enum level = spdlog::level::warn;
  Status status;
  const char* source = env_vars::kHvdLogLevel;
  auto text = GetEnv(env_vars::kHvdLogLevel);
  if (!text) {
    source = env_vars::kHorovodLogLevel;
    text = GetEnv(env_vars::kHorovodLogLevel);
  }
  if (text) {
    auto parsed =
        ParseLogLevel(*text, std::string("environment variable ") + source);
    if (parsed.ok()) {
      level = *parsed;
    } else {
      status = parsed.status();
    }
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  if (spdlog::default_logger() != logger) spdlog::set_default_logger(logger);
  return status;
}

void SetLogTime(bool with_time) {
  std::lock_guard<std::mutex> lock(PatternMu());
  Patterns().with_time = with_time;
  auto logger = spdlog::default_logger();
  ApplyPatterns(logger && logger->name() == "hvd" ? logger.get() : nullptr);
}

void Announce(const std::string& line) { AnnounceLogger().info("{}", line); }

std::string DecimalSeconds(std::chrono::milliseconds duration) {
  const long long ms = duration.count();
  std::string text = std::to_string(ms / 1000);
  long long fraction = std::llabs(ms % 1000);
  if (fraction == 0) return text;
  if (ms < 0 && ms > -1000) text = "-" + text;
  std::string digits = std::to_string(1000 + fraction).substr(1);  // "250"
  digits.erase(digits.find_last_not_of('0') + 1);
  return text + "." + digits;
}

std::string Count(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " +
         (n == 1         ? one
          : many.empty() ? one + "s"
                         : many);
}

}  // namespace hvd::common
