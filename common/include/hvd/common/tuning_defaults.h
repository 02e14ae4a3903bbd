// The workers' tuning defaults, written once: the runtime starts from them
// (hvd/runtime/config.h) and hvdrun's --help names them, so the two never
// disagree. Each is also Horovod's default.
#pragma once

#include <chrono>
#include <cstdint>

namespace hvd::common {

// HOROVOD_FUSION_THRESHOLD (--fusion-threshold-mb): 128 MiB, at most 1 TiB
// (the bound both the runtime and hvdrun's option check).
inline constexpr int64_t kDefaultFusionThreshold = int64_t{128} << 20;
inline constexpr int64_t kMaxFusionThreshold = int64_t{1} << 40;
// HOROVOD_CYCLE_TIME (--cycle-time-ms): 1 ms, at most a minute.
inline constexpr std::chrono::microseconds kDefaultCycleTime{1000};
inline constexpr std::chrono::milliseconds kMaxCycleTime{60000};
// HOROVOD_CACHE_CAPACITY (--cache-capacity): entries per process set.
inline constexpr int64_t kDefaultCacheCapacity = 1024;
// HOROVOD_GLOO_TIMEOUT_SECONDS (--gloo-timeout-seconds).
inline constexpr std::chrono::seconds kDefaultGlooTimeout{30};
// HOROVOD_ELASTIC_TIMEOUT (--elastic-timeout): how long hvdrun waits for
// enough slots, and an elastic worker keeps trying to rejoin the job.
inline constexpr std::chrono::seconds kDefaultElasticTimeout{600};

}  // namespace hvd::common
