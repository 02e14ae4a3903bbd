#include "job/worker_env.h"

#include <algorithm>
#include <cmath>

#include "hvd/common/env_vars.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::launcher {

namespace ev = common::env_vars;

EnvList WorkerEnvironment(const SlotAssignment& slot, int64_t worker_id,
                          const DriverEndpoint& driver,
                          const LaunchConfig& config) {
  EnvList env = {
      {ev::kRank, std::to_string(slot.layout.rank)},
      {ev::kSize, std::to_string(slot.layout.size)},
      {ev::kLocalRank, std::to_string(slot.layout.local_rank)},
      {ev::kLocalSize, std::to_string(slot.layout.local_size)},
      {ev::kCrossRank, std::to_string(slot.layout.cross_rank)},
      {ev::kCrossSize, std::to_string(slot.layout.cross_size)},
      {ev::kHostname, slot.host},
      {ev::kGlooRendezvousAddr, driver.address},
      {ev::kGlooRendezvousPort, std::to_string(driver.port)},
      {ev::kHvdWorkerId, std::to_string(worker_id)},
      {ev::kHvdWorkerKey,
       common::WorkerKey(
           driver.secret,
           {worker_id, rendezvous::SlotName(slot.host, SlotIndex(slot))})},
      {ev::kController, "gloo"},
      {ev::kCpuOperations, "gloo"},
      {ev::kElastic, config.elastic ? "1" : "0"},
      {ev::kStartTimeout, std::to_string(config.start_timeout.count())},
  };
  if (config.elastic) {
    // Whole seconds, rounded up: the workers' bound is never the shorter.
    env.emplace_back(ev::kElasticTimeout,
                     std::to_string(std::chrono::ceil<std::chrono::seconds>(
                                        config.elastic_timeout)
                                        .count()));
  }
  if (config.rendezvous_backend == RendezvousBackend::kEtcd) {
    env.emplace_back(ev::kHvdRendezvousBackend, "etcd");
    env.emplace_back(ev::kHvdJobPublicKey, driver.job_public_key);
    // An elastic worker gets each generation's key when it checks in; a
    // static job's workers are the members of every generation they start.
    if (!config.elastic) {
      env.emplace_back(ev::kHvdGenerationsKey,
                       common::GenerationsKey(driver.secret));
    }
    env.emplace_back(ev::kHvdEtcdEndpoints, config.rendezvous_endpoint);
    env.emplace_back(ev::kHvdEtcdPrefix, EtcdJobPrefix(config.job_id));
  } else {
    env.emplace_back(ev::kHvdRendezvousBackend, "embedded");
  }
  if (!config.network_interface.empty()) {
    env.emplace_back(ev::kGlooIface, config.network_interface);
  }
  if (config.gloo_timeout_seconds) {
    env.emplace_back(ev::kGlooTimeoutSeconds,
                     std::to_string(*config.gloo_timeout_seconds));
  }
  if (config.fusion_threshold_mb) {
    env.emplace_back(ev::kFusionThreshold,
                     std::to_string(static_cast<int64_t>(std::llround(
                         *config.fusion_threshold_mb * 1024 * 1024))));
  }
  if (config.cycle_time_ms) {
    env.emplace_back(ev::kCycleTime, std::to_string(*config.cycle_time_ms));
  }
  if (config.cache_capacity) {
    env.emplace_back(ev::kCacheCapacity,
                     std::to_string(*config.cache_capacity));
  }
  if (!config.timeline_filename.empty()) {
    env.emplace_back(ev::kTimeline, config.timeline_filename);
  }
  if (config.timeline_mark_cycles) {
    env.emplace_back(ev::kTimelineMarkCycles, "1");
  }
  if (config.autotune) env.emplace_back(ev::kAutotune, "1");
  if (!config.autotune_log_file.empty()) {
    env.emplace_back(ev::kAutotuneLog, config.autotune_log_file);
  }
  if (config.autotune_warmup_samples) {
    env.emplace_back(ev::kAutotuneWarmupSamples,
                     std::to_string(*config.autotune_warmup_samples));
  }
  if (config.autotune_steps_per_sample) {
    env.emplace_back(ev::kAutotuneStepsPerSample,
                     std::to_string(*config.autotune_steps_per_sample));
  }
  if (config.autotune_max_samples) {
    env.emplace_back(ev::kAutotuneMaxSamples,
                     std::to_string(*config.autotune_max_samples));
  }
  if (config.stall_check_disable) {
    env.emplace_back(ev::kStallCheckDisable, "1");
  }
  if (config.stall_check_warning_seconds) {
    env.emplace_back(ev::kStallCheckTimeSeconds,
                     std::to_string(*config.stall_check_warning_seconds));
  }
  if (config.stall_check_shutdown_seconds) {
    env.emplace_back(ev::kStallShutdownTimeSeconds,
                     std::to_string(*config.stall_check_shutdown_seconds));
  }
  if (!config.log_level.empty()) {
    env.emplace_back(ev::kHorovodLogLevel, config.log_level);
  }
  if (config.log_hide_time) {
    env.emplace_back(ev::kLogHideTime, *config.log_hide_time ? "1" : "0");
  }
  for (const auto& [name, value] :
       {std::pair{ev::kHierarchicalAllreduce, config.hierarchical_allreduce},
        std::pair{ev::kHierarchicalAllgather, config.hierarchical_allgather}}) {
    if (value) env.emplace_back(name, *value ? "1" : "0");
  }
  if (!config.thread_affinity.empty()) {
    env.emplace_back(ev::kThreadAffinity, config.thread_affinity);
  }
  if (config.autotune_gaussian_process_noise) {
    env.emplace_back(ev::kAutotuneGaussianProcessNoise,
                     std::to_string(*config.autotune_gaussian_process_noise));
  }
  if (config.tcp_only) env.emplace_back(ev::kNcclIbDisable, "1");
  for (const auto& variable : config.extra_env) {
    bool taken = std::any_of(env.begin(), env.end(), [&](const auto& set) {
      return set.first == variable.first;
    });
    if (!taken) env.push_back(variable);
  }
  return env;
}

std::string ShellQuote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string ShellWords(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) {
    line += (line.empty() ? "" : " ") + ShellQuote(word);
  }
  return line;
}

}  // namespace hvd::launcher
