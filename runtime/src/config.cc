#include "hvd/runtime/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <tuple>

#include "transport/bind_address.h"

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::runtime {

namespace ev = common::env_vars;
using common::Result;
using common::Status;

Result<std::vector<int>> ParseThreadAffinity(const std::string& text) {
  std::vector<int> cores;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    long core = std::strtol(item.c_str(), &end, 10);
    // Digits only: strtol alone would also take a sign or leading blanks.
    if (item.empty() || !std::isdigit(static_cast<unsigned char>(item[0])) ||
        *end != '\0' || core > 65535) {
      return Status::InvalidArgument(
          std::string(ev::kThreadAffinity) + "='" + text +
          "' is not a list of CPU core numbers (0 to 65535), one per local "
          "rank, separated by commas");
    }
    cores.push_back(static_cast<int>(core));
    if (comma == std::string::npos) return cores;
    start = comma + 1;
  }
}

ProcessKeys TakeProcessKeys() {
  static std::mutex mu;
  static std::string last_worker_key, last_generations_key;
  std::lock_guard<std::mutex> lock(mu);
  ProcessKeys taken;
  const bool keep = common::GetEnvString(ev::kHvdKeepWorkerKey, "") == "1";
  for (auto [name, last] :
       {std::pair{ev::kHvdWorkerKey, &last_worker_key},
        std::pair{ev::kHvdGenerationsKey, &last_generations_key}}) {
    if (auto env = common::GetEnv(name)) {
      *last = *env;
      if (!keep) {
        unsetenv(name);
        taken.removed.push_back(name);
      }
    }
  }
  taken.worker_key = last_worker_key;
  taken.generations_key = last_generations_key;
  return taken;
}

Result<std::string> RuntimeConfig::EtcdSealKey(int64_t generation) const {
  if (!generations_key.empty()) {
    return common::GenerationKey(generations_key, generation);
  }
  if (generation == generation_key_of && !generation_key.empty()) {
    return generation_key;
  }
  return Status::PermissionDenied(
      "this worker holds no key for generation " + std::to_string(generation) +
      "'s values in etcd (it is not one of its members)");
}

common::HttpClientOptions RuntimeConfig::DriverClientOptions() const {
  return DriverClientOptions(rendezvous_addr, rendezvous_port);
}

common::HttpClientOptions RuntimeConfig::DriverClientOptions(
    const std::string& host, int port) const {
  common::HttpClientOptions options;
  options.host = host;
  options.port = port;
  options.secret = worker_key;
  options.worker = identity();
  return options;
}

Result<RuntimeConfig> RuntimeConfig::FromEnv() {
  RuntimeConfig config;
  if (auto cycle = common::GetEnv(ev::kCycleTime)) {
    char* end = nullptr;
    double ms = std::strtod(cycle->c_str(), &end);
    const double max_ms =
        std::chrono::duration<double, std::milli>(common::kMaxCycleTime)
            .count();
    if (cycle->empty() || *end != '\0' || !(ms > 0) || ms > max_ms) {
      return Status::InvalidArgument(
          std::string(ev::kCycleTime) + "='" + *cycle +
          "' is not a number of milliseconds in (0, " +
          std::to_string(static_cast<int64_t>(max_ms)) + "]");
    }
    config.cycle_time = std::chrono::microseconds(
        std::max<int64_t>(1, static_cast<int64_t>(ms * 1000)));
  }
  auto fusion = common::GetEnvInt(ev::kFusionThreshold, config.fusion_threshold,
                                  0, common::kMaxFusionThreshold);
  if (!fusion.ok()) return fusion.status();
  config.fusion_threshold = *fusion;
  config.fusion_threshold_set =
      common::GetEnv(ev::kFusionThreshold).has_value();
  config.cycle_time_set = common::GetEnv(ev::kCycleTime).has_value();
  config.hierarchical_allreduce_set =
      common::GetEnv(ev::kHierarchicalAllreduce).has_value();
  auto autotune = common::GetEnvBool(ev::kAutotune, false);
  if (!autotune.ok()) return autotune.status();
  config.autotune = *autotune;
  config.autotune_log = common::GetEnvString(ev::kAutotuneLog, "");
  for (auto [name, field, min] :
       {std::tuple{ev::kAutotuneWarmupSamples, &config.autotune_warmup_samples,
                   0},
        std::tuple{ev::kAutotuneStepsPerSample,
                   &config.autotune_cycles_per_sample, 1},
        std::tuple{ev::kAutotuneMaxSamples, &config.autotune_max_samples, 1}}) {
    auto value = common::GetEnvInt(name, *field, min, 1 << 20);
    if (!value.ok()) return value.status();
    *field = static_cast<int>(*value);
  }
  auto cache = common::GetEnvInt(ev::kCacheCapacity, config.cache_capacity, 0,
                                 int64_t(1) << 20);
  if (!cache.ok()) return cache.status();
  config.cache_capacity = *cache;
  for (auto [name, field] :
       {std::pair{ev::kDisableGroupFusion, &config.disable_group_fusion},
        std::pair{ev::kDynamicProcessSets, &config.dynamic_process_sets},
        std::pair{ev::kHierarchicalAllreduce, &config.hierarchical_allreduce},
        std::pair{ev::kHierarchicalAllgather, &config.hierarchical_allgather},
        std::pair{ev::kHvdNcclShrink, &config.nccl_shrink}}) {
    auto value = common::GetEnvBool(name, *field);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  // At least a page; at most 1 GiB per buffer; unset: 0, the runtime's
  // choice.
  auto chunk = common::GetEnvInt(ev::kHvdShmChunkBytes,
                                 static_cast<int64_t>(config.shm_chunk_bytes),
                                 4096, int64_t(1) << 30);
  if (!chunk.ok()) return chunk.status();
  config.shm_chunk_bytes = static_cast<size_t>(*chunk);
  auto stall_disabled = common::GetEnvBool(ev::kStallCheckDisable, false);
  if (!stall_disabled.ok()) return stall_disabled.status();
  config.stall_check = !*stall_disabled;
  for (auto [name, field] :
       {std::pair{ev::kStallCheckTimeSeconds, &config.stall_check_time},
        std::pair{ev::kStallShutdownTimeSeconds,
                  &config.stall_shutdown_time}}) {
    auto value = common::GetEnvSeconds(name, *field);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  auto report = common::GetEnvSeconds(ev::kHvdReportIntervalSeconds,
                                      config.report_interval);
  if (!report.ok()) return report.status();
  config.report_interval = *report;
  if (auto cores = common::GetEnv(ev::kThreadAffinity)) {
    auto parsed = ParseThreadAffinity(*cores);
    if (!parsed.ok()) return parsed.status();
    config.thread_affinity = *parsed;
  }
  config.timeline = common::GetEnvString(ev::kTimeline, "");
  // Horovod's value for "no file until hvd.start_timeline(path)", which
  // hvd allows whatever the variable says.
  if (config.timeline == kDynamicTimeline) config.timeline.clear();
  auto mark_cycles = common::GetEnvBool(ev::kTimelineMarkCycles, false);
  if (!mark_cycles.ok()) return mark_cycles.status();
  config.timeline_mark_cycles = *mark_cycles;
  if (!common::GetEnv(ev::kRank)) return config;
  struct IntField {
    const char* name;
    int* field;
    int64_t min;
  };
  for (const IntField& f :
       {IntField{ev::kSize, &config.layout.size, 1},
        IntField{ev::kRank, &config.layout.rank, 0},
        IntField{ev::kLocalSize, &config.layout.local_size, 1},
        IntField{ev::kLocalRank, &config.layout.local_rank, 0},
        IntField{ev::kCrossSize, &config.layout.cross_size, 1},
        IntField{ev::kCrossRank, &config.layout.cross_rank, 0},
        IntField{ev::kGlooRendezvousPort, &config.rendezvous_port, 1}}) {
    auto value = common::GetEnvInt(f.name, -1, f.min, 1 << 30);
    if (!value.ok()) return value.status();
    if (*value < 0) {
      return Status::InvalidArgument(std::string("environment variable ") +
                                     f.name +
                                     " is not set (is this worker "
                                     "started by hvdrun?)");
    }
    *f.field = static_cast<int>(*value);
  }
  auto check_below = [](int value, int bound, const char* name,
                        const char* bound_name) -> Status {
    if (value >= bound) {
      return Status::InvalidArgument(std::string(name) + "=" +
                                     std::to_string(value) + " is not below " +
                                     bound_name + "=" + std::to_string(bound));
    }
    return Status::Ok();
  };
  for (Status status :
       {check_below(config.layout.rank, config.layout.size, ev::kRank,
                    ev::kSize),
        check_below(config.layout.local_rank, config.layout.local_size,
                    ev::kLocalRank, ev::kLocalSize),
        check_below(config.layout.cross_rank, config.layout.cross_size,
                    ev::kCrossRank, ev::kCrossSize)}) {
    if (!status.ok()) return status;
  }
  if (!config.thread_affinity.empty() &&
      config.thread_affinity.size() <
          static_cast<size_t>(config.layout.local_size)) {
    return Status::InvalidArgument(
        std::string(ev::kThreadAffinity) + " names " +
        std::to_string(config.thread_affinity.size()) +
        " core(s) but this host runs " +
        std::to_string(config.layout.local_size) + " local ranks (" +
        ev::kLocalSize + "): give one core per local rank");
  }
  config.hostname = common::GetEnvString(ev::kHostname, "localhost");
  auto worker_id = common::GetEnvInt(ev::kHvdWorkerId, 0, 0, INT64_MAX);
  if (!worker_id.ok()) return worker_id.status();
  config.worker_id = *worker_id;
  config.rendezvous_addr = common::GetEnvString(ev::kGlooRendezvousAddr, "");
  const ProcessKeys keys = TakeProcessKeys();
  config.worker_key = keys.worker_key;
  if (config.rendezvous_addr.empty() || config.worker_key.empty() ||
      config.worker_id < 1) {
    return Status::InvalidArgument(
        std::string(ev::kGlooRendezvousAddr) + ", " + ev::kHvdWorkerKey +
        " and " + ev::kHvdWorkerId +
        " must be set (is this worker started by hvdrun?)");
  }
  config.slot = rendezvous::SlotName(config.hostname, config.layout.local_rank);
  const std::string backend =
      common::GetEnvString(ev::kHvdRendezvousBackend, "embedded");
  if (backend == "etcd") {
    config.etcd_prefix = common::GetEnvString(ev::kHvdEtcdPrefix, "");
    config.job_public_key = common::GetEnvString(ev::kHvdJobPublicKey, "");
    config.generations_key = keys.generations_key;
    if (config.etcd_prefix.empty() || config.job_public_key.empty()) {
      return Status::InvalidArgument(std::string(ev::kHvdRendezvousBackend) +
                                     "=etcd needs " + ev::kHvdEtcdPrefix +
                                     " and " + ev::kHvdJobPublicKey +
                                     " (is this worker started by hvdrun?)");
    }
    auto etcd = rendezvous::EtcdOptionsFromEnvironment(
        common::GetEnvString(ev::kHvdEtcdEndpoints, ""));
    if (!etcd.ok()) return etcd.status().WithContext(ev::kHvdEtcdEndpoints);
    config.etcd = std::move(*etcd);
  } else if (backend != "embedded") {
    return Status::InvalidArgument(std::string(ev::kHvdRendezvousBackend) +
                                   "='" + backend +
                                   "' is neither embedded nor etcd");
  }
  const std::string interfaces = common::GetEnvString(ev::kGlooIface, "");
  auto bind = ChooseBindAddress(
      interfaces,
      interfaces.empty()
          ? std::vector<common::NetworkInterface>{}
          : UsableInterfaces(common::LocalInterfaces(), config.rendezvous_addr),
      interfaces.empty() ? RouteSource(config.rendezvous_addr) : "",
      config.hostname);
  if (!bind.ok()) return bind.status();
  config.bind_address = *bind;
  auto elastic_timeout =
      common::GetEnvSeconds(ev::kElasticTimeout, config.elastic_timeout);
  if (!elastic_timeout.ok()) return elastic_timeout.status();
  config.elastic_timeout = *elastic_timeout;
  auto start = common::GetEnvSeconds(ev::kStartTimeout, config.start_timeout);
  if (!start.ok()) return start.status();
  config.start_timeout = *start;
  auto gloo =
      common::GetEnvSeconds(ev::kGlooTimeoutSeconds, config.gloo_timeout);
  if (!gloo.ok()) return gloo.status();
  config.gloo_timeout = *gloo;
  auto elastic = common::GetEnvBool(ev::kElastic, false);
  if (!elastic.ok()) return elastic.status();
  config.elastic = *elastic;
  if (config.etcd && !config.elastic && config.generations_key.empty()) {
    // An elastic worker gets its generation's key when it checks in.
    return Status::InvalidArgument(std::string(ev::kHvdRendezvousBackend) +
                                   "=etcd in a static job needs " +
                                   ev::kHvdGenerationsKey +
                                   " (is this worker started by hvdrun?)");
  }
  return config;
}

}  // namespace hvd::runtime
