#include "hvd/common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"

namespace hvd::common {

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
  std::string tag = role + " " + (rank < 0 ? "-" : std::to_string(rank));
  // HOROVOD_LOG_HIDE_TIME=1 (hvdrun --log-without-timestamp): no time.
  auto hide_time = GetEnvBool(env_vars::kLogHideTime, false);
  const bool with_time = !hide_time.ok() || !*hide_time;
  logger->set_pattern((with_time ? "[%Y-%m-%d %H:%M:%S.%e] [" : "[") + tag +
                      "] [%l] %v");
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

}  // namespace hvd::common
