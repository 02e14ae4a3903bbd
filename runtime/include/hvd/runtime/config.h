// RuntimeConfig: everything a worker's runtime reads from its environment,
// read once at hvd.init() by FromEnv(); nothing below it calls getenv.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/http_client.h"
#include "hvd/common/rank_layout.h"
#include "hvd/common/status.h"
#include "hvd/common/tuning_defaults.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/etcd_client.h"

namespace hvd::runtime {

// HOROVOD_TIMELINE=DYNAMIC: no timeline file at hvd.init(), as in Horovod.
inline constexpr char kDynamicTimeline[] = "DYNAMIC";

// HOROVOD_FUSION_THRESHOLD's default in bytes; the fusion plan and
// autotune start from it too.
using common::kDefaultFusionThreshold;

// The keys hvdrun gave this process (HVD_WORKER_KEY, and a static etcd
// job's HVD_GENERATIONS_KEY): read from the environment and removed from it
// unless HVD_KEEP_WORKER_KEY is 1; when the environment no longer has one,
// the value this process read last (an elastic reset reads the config
// again). `removed` names the variables this call removed, for the Python
// layer to drop its own copies of the environment's entries.
struct ProcessKeys {
  std::string worker_key;
  std::string generations_key;
  std::vector<std::string> removed;
};
ProcessKeys TakeProcessKeys();

struct RuntimeConfig {
  // This worker's place in the job (HOROVOD_RANK, _SIZE, ...; in elastic
  // mode the check-in's answer).
  common::RankLayout layout;
  // This worker's host as the launcher named it (HOROVOD_HOSTNAME).
  std::string hostname = "localhost";
  // Where Gloo and the notification server listen: the address of the
  // first interface of HOROVOD_GLOO_IFACE this host has, else the local
  // address that routes to the rendezvous server (bind_address.h).
  std::string bind_address = "127.0.0.1";
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  // This process's own key (HVD_WORKER_KEY) and the identity it names:
  // hvdrun's id of the process (HVD_WORKER_ID) and its slot
  // ("<hostname>:<local rank>" as the launcher started it). Every request
  // to hvdrun's server is signed with it (DriverClientOptions), and so is
  // everything hvdrun sends the notification server.
  std::string worker_key;
  std::string slot;
  common::WorkerIdentity identity() const { return {worker_id, slot}; }
  // The etcd backend (common/worker_key.h, job_signing_key.h): the job's
  // public key, which checks the leading hvdrun's address there
  // (HVD_JOB_PUBLIC_KEY); and what seals the Gloo keys this worker writes
  // there: a static job's generations key (HVD_GENERATIONS_KEY), or the key
  // of the generation an elastic worker joined, from its check-in answer.
  std::string job_public_key;
  std::string generations_key;
  std::string generation_key;
  int64_t generation_key_of = -1;
  // The key that seals `generation`'s values in etcd; kPermissionDenied
  // when this worker holds none for it (not a member).
  common::Result<std::string> EtcdSealKey(int64_t generation) const;
  // With the etcd backend (HVD_RENDEZVOUS_BACKEND=etcd): the etcd cluster
  // and the job's prefix in it, where the Gloo contexts meet. Unset: they
  // meet in the rendezvous server.
  std::optional<rendezvous::EtcdOptions> etcd;
  std::string etcd_prefix;
  // Budget for meeting the other workers at the rendezvous.
  std::chrono::milliseconds start_timeout{30000};
  // How long an elastic worker keeps trying to rejoin the job after a
  // failure before it gives up (HOROVOD_ELASTIC_TIMEOUT, seconds).
  std::chrono::milliseconds elastic_timeout = common::kDefaultElasticTimeout;
  // Budget of one Gloo operation.
  std::chrono::milliseconds gloo_timeout = common::kDefaultGlooTimeout;
  // How long the background thread waits for new work before it negotiates
  // anyway (HOROVOD_CYCLE_TIME, milliseconds, fractions allowed). New work
  // wakes it at once, so this bounds idle polling, not latency.
  std::chrono::microseconds cycle_time = common::kDefaultCycleTime;
  // Elastic mode (HOROVOD_ELASTIC=1): rank and size come from checking in
  // with the driver at every init; `hostname` and `local_rank` name the
  // slot; the driver bounds how long a check-in waits.
  bool elastic = false;
  // hvdrun's id of this process (HVD_WORKER_ID), sent at check-in so that a
  // process the driver replaced cannot take its slot back.
  int64_t worker_id = 0;
  // Allreduces ready in the same cycle with the same dtype, op and scale
  // factors are packed into one buffer of up to this many bytes and reduced
  // with one Gloo call (HOROVOD_FUSION_THRESHOLD, bytes; 0 turns it off).
  int64_t fusion_threshold = kDefaultFusionThreshold;
  // On a host with more than one rank, allreduce (and reducescatter) and
  // allgather run hierarchically: through shared memory inside the host,
  // over Gloo across hosts (runtime/src/ops/shm/host_group.h). On unless
  // HOROVOD_HIERARCHICAL_ALLREDUCE / _ALLGATHER is 0; broadcast goes the
  // same way while either is on. Each rank's slot moves data in chunks of
  // HVD_SHM_CHUNK_BYTES (two buffers of it per local rank); 0, the
  // default: the runtime chooses (ops/shm/host_group.cc, ChunkBytes).
  bool hierarchical_allreduce = true;
  bool hierarchical_allgather = true;
  bool hierarchical_allreduce_set = false;  // autotune leaves it alone
  size_t shm_chunk_bytes = 0;
  // Whether an elastic reset may keep or shrink the global set's NCCL
  // communicator (HVD_NCCL_SHRINK, default on); off on any rank, every
  // generation makes a new one.
  bool nccl_shrink = true;
  // Tensors of a grouped op fuse only with each other
  // (HOROVOD_DISABLE_GROUP_FUSION=1).
  bool disable_group_fusion = false;
  // Response cache entries per process set (HOROVOD_CACHE_CAPACITY; 0 turns
  // the cache off).
  int64_t cache_capacity = common::kDefaultCacheCapacity;
  // Process sets may be added and removed after init
  // (HOROVOD_DYNAMIC_PROCESS_SETS=1).
  bool dynamic_process_sets = false;
  // Stall inspector (on the first rank of each set): warn when a tensor has
  // waited this long for some ranks (HOROVOD_STALL_CHECK_TIME_SECONDS,
  // default 60; HOROVOD_STALL_CHECK_DISABLE=1 turns it off), and stop every
  // rank's collectives after `stall_shutdown_time`
  // (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS; 0, the default, never).
  bool stall_check = true;
  std::chrono::milliseconds stall_check_time{60000};
  std::chrono::milliseconds stall_shutdown_time{0};
  // Rank 0 writes a Chrome-trace timeline here from hvd.init()
  // (HOROVOD_TIMELINE; empty or DYNAMIC: none until hvd.start_timeline()),
  // with a mark at every cycle (HOROVOD_TIMELINE_MARK_CYCLES=1).
  std::string timeline;
  bool timeline_mark_cycles = false;
  // Autotune (HOROVOD_AUTOTUNE=1): rank 0 tunes the fusion threshold, the
  // cycle time and the cache on/off from measured throughput and tells the
  // other ranks (runtime/src/tuning/parameter_manager.h). A knob set explicitly
  // (HOROVOD_FUSION_THRESHOLD, HOROVOD_CYCLE_TIME, a cache capacity of 0)
  // stays as set. A sample is HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE cycles that
  // moved data; HOROVOD_AUTOTUNE_LOG gets one CSV line per trial.
  bool autotune = false;
  std::string autotune_log;
  int autotune_warmup_samples = 3;
  int autotune_cycles_per_sample = 10;
  int autotune_max_samples = 20;
  bool fusion_threshold_set = false;
  // The background thread runs on core thread_affinity[local_rank]
  // (HOROVOD_THREAD_AFFINITY, "0,4": one core per local rank, as Horovod);
  // empty: not pinned.
  std::vector<int> thread_affinity;
  bool cycle_time_set = false;
  // A worker hvdrun started reports its progress to the driver this often
  // (HVD_REPORT_INTERVAL_SECONDS, fractions allowed; 0: never). See
  // reporter.h.
  std::chrono::milliseconds report_interval{1000};

  // Reads HOROVOD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK,
  // _CROSS_SIZE, _HOSTNAME, HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT,
  // HOROVOD_GLOO_IFACE, HOROVOD_START_TIMEOUT, HOROVOD_GLOO_TIMEOUT_SECONDS,
  // HOROVOD_CYCLE_TIME, HOROVOD_FUSION_THRESHOLD, the cache, group fusion,
  // process set and stall settings above, HVD_SECRET_KEY and
  // HVD_REPORT_INTERVAL_SECONDS. Without
  // HOROVOD_RANK the worker runs alone (size 1, no rendezvous), as `python
  // train.py` does under Horovod. Malformed or inconsistent values are
  // kInvalidArgument naming the variable.
  static common::Result<RuntimeConfig> FromEnv();

  // A client of hvdrun's server at `host`:`port` (the rendezvous address
  // unless given), signing as this worker.
  common::HttpClientOptions DriverClientOptions() const;
  common::HttpClientOptions DriverClientOptions(const std::string& host,
                                                int port) const;
};

// HOROVOD_THREAD_AFFINITY's "0,4" -> {0, 4}; anything else is
// kInvalidArgument naming the variable.
common::Result<std::vector<int>> ParseThreadAffinity(const std::string& text);

}  // namespace hvd::runtime
