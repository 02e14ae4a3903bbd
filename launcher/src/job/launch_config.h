// Every launcher setting, filled once from the command line by cli.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hvd/common/tuning_defaults.h"

namespace hvd::launcher {

// The job's waits, each default written once: LaunchConfig, the policy and
// --help read them here. Whole seconds for --start-timeout, because the
// workers' environment (HOROVOD_START_TIMEOUT) and ssh's ConnectTimeout
// take whole seconds; --elastic-timeout stays in hvdrun, in milliseconds.
inline constexpr std::chrono::seconds kDefaultStartTimeout{30};
// --leader-lease-seconds: how long the lead of a job outlives its holder's
// silence (the etcd backend), and its bounds.
inline constexpr std::chrono::seconds kDefaultLeaderLease{5};
inline constexpr int kMinLeaderLeaseSeconds = 2;
inline constexpr int kMaxLeaderLeaseSeconds = 60;
using common::kDefaultElasticTimeout;

struct HostSlots {
  std::string host;
  int slots = 1;
};

// The Slurm allocation hvdrun runs in (slurm_allocation.h reads it).
struct SlurmAllocation {
  std::string job_id;
  std::vector<HostSlots> nodes;  // in Slurm's order: the batch node first
  // SLURM_CPUS_PER_TASK when the job asked for it: each worker step gets
  // that many CPUs.
  std::optional<int> cpus_per_task;
};

// How workers start (--launcher): kSsh runs local hosts' workers directly
// and the others' over ssh; kSlurm starts every worker as a step of the
// allocation (srun); kLocal only on this machine.
enum class Launcher { kSsh, kSlurm, kLocal };

// --status-bind none: no status page, /metrics or `hvdrun status` entry.
inline constexpr char kNoStatusServer[] = "none";

// Where the job's rendezvous lives (--rendezvous-backend): hvdrun's own
// server, or an etcd cluster, under the job's prefix (EtcdJobPrefix).
enum class RendezvousBackend { kEmbedded, kEtcd };

// Everything of one job in etcd is under this prefix, so one etcd serves
// many jobs; `job_id` is --job-id's, checked (JobIdError).
inline std::string EtcdJobPrefix(const std::string& job_id) {
  return "/hvd/jobs/" + job_id + "/";
}

// Once `published` is, the Gloo keys of every generation below the one
// this returns can go: a worker of the previous generation may still be
// leaving it, none of an older one needs its keys.
inline int64_t FirstGlooGenerationKept(int64_t published) {
  return published - 1;
}

struct LaunchConfig {
  // Workers to start; 0 means one per listed slot.
  int num_proc = 0;
  // From -H/--hosts or --hostfile, in the given order; default
  // localhost:<num_proc>.
  std::vector<HostSlots> hosts;
  Launcher launcher = Launcher::kSsh;
  // Set inside an allocation (SLURM_JOB_ID), whatever the launcher.
  std::optional<SlurmAllocation> slurm;
  std::string network_interface;
  // --output-filename: a directory for the workers' output files
  // (output_relay.h says which).
  std::string output_dir;
  // Where the status page and /metrics listen (--status-bind): "ADDR:PORT",
  // "ADDR" (any port), ":PORT" (loopback), or kNoStatusServer.
  std::string status_bind = "127.0.0.1";
  // --status-token-file: the status page's read token is this file's
  // content, made (a new random token, mode 0600) if it does not exist;
  // empty: a new token per run.
  std::string status_token_file;
  // --rendezvous-port: the rendezvous server's port (0: any free one).
  int rendezvous_port = 0;
  RendezvousBackend rendezvous_backend = RendezvousBackend::kEmbedded;
  // --rendezvous-endpoint: the etcd members, "HOST:PORT[,HOST:PORT...]".
  std::string rendezvous_endpoint;
  // --job-id: the job's name in etcd; empty until hvdrun makes one up.
  std::string job_id;
  // --standby: wait to lead the job, then take it over from the state the
  // last leader left in etcd (driver/etcd_job.h).
  bool standby = false;
  // --leader-lease-seconds: the lease through which this hvdrun leads or
  // stands by; a standby leads at most this long after its leader fell
  // silent.
  std::chrono::milliseconds leader_lease{kDefaultLeaderLease};
  // --job-secret-file: the job's secret is this file's content, made (a
  // new random secret, mode 0600) if it does not exist, so that every
  // hvdrun of the job can read what the leader seals in etcd; empty: a new
  // secret per run.
  std::string job_secret_file;
  // --prefix-output-with-timestamp: every relayed worker line starts with
  // the time hvdrun read it, as horovodrun writes it.
  bool prefix_output_with_timestamp = false;
  bool verbose = false;
  std::string log_level;
  int ssh_port = 0;  // 0: ssh's default
  std::string ssh_identity_file;
  // --ssh-accept-new-host-keys: ssh records the key of a host it has never
  // seen (StrictHostKeyChecking=accept-new); a changed key still fails.
  bool ssh_accept_new_host_keys = false;
  std::chrono::seconds start_timeout{kDefaultStartTimeout};
  std::optional<int> gloo_timeout_seconds;
  std::optional<double> fusion_threshold_mb;
  std::optional<double> cycle_time_ms;
  std::optional<int> cache_capacity;
  // Only TCP (--tcp): NCCL_IB_DISABLE=1 for the workers, as horovodrun.
  bool tcp_only = false;
  // Cores of the background threads, one per local rank
  // (HOROVOD_THREAD_AFFINITY, "0,4"); empty: not pinned.
  std::string thread_affinity;
  // Workers' log lines without timestamps (HOROVOD_LOG_HIDE_TIME); unset:
  // the workers' default.
  std::optional<bool> log_hide_time;
  // Hierarchical allreduce / allgather (HOROVOD_HIERARCHICAL_*); unset: the
  // workers' default (on).
  std::optional<bool> hierarchical_allreduce;
  std::optional<bool> hierarchical_allgather;
  std::string timeline_filename;
  bool timeline_mark_cycles = false;
  // Autotune (rank 0 tunes fusion threshold, cycle time and cache on/off);
  // the counts are unset unless given.
  bool autotune = false;
  std::string autotune_log_file;
  std::optional<int> autotune_warmup_samples;
  std::optional<int> autotune_steps_per_sample;
  std::optional<int> autotune_max_samples;
  // Checked and passed on (HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE); hvd's
  // tuner has no Gaussian process, so it has no effect.
  std::optional<double> autotune_gaussian_process_noise;
  // Stall inspector: disabled, or its warning / shutdown times in seconds
  // (shutdown 0: never).
  bool stall_check_disable = false;
  std::optional<int> stall_check_warning_seconds;
  std::optional<int> stall_check_shutdown_seconds;
  // Grace between SIGTERM and SIGKILL when workers are stopped.
  std::chrono::milliseconds stop_grace{5000};
  // -x NAME=VALUE (mpirun's and horovodrun's spelling): set for every
  // worker, local or remote; hvdrun's own variables win over them.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // A remote worker's guard stops it when it hears nothing from hvdrun for
  // this long (HVD_REMOTE_SILENCE_SECONDS): a partitioned host's workers
  // end by themselves.
  std::chrono::milliseconds remote_silence{5000};
  // --adopt-grace-seconds (etcd backend, not under Slurm): a worker whose
  // hvdrun is gone or silent is kept this long for the hvdrun that leads
  // the job next (remote/adoptable_guard.h); 0: stopped as above.
  std::chrono::milliseconds adopt_grace{0};
  std::vector<std::string> command;

  // Elastic mode (on with a discovery script or --min-np).
  bool elastic = false;
  int min_np = 0;          // default: num_proc
  int max_np = 0;          // 0: no bound
  int slots_per_host = 1;  // for discovery lines without ":N"
  std::string discovery_script;
  std::chrono::milliseconds elastic_timeout{kDefaultElasticTimeout};
  std::optional<int> reset_limit;
  std::optional<std::pair<int, int>> cooldown_range;  // seconds
  std::chrono::milliseconds discovery_interval{1000};
  // A discovery run past this is killed; the last hosts stay
  // (HVD_DISCOVERY_TIMEOUT, seconds).
  std::chrono::milliseconds discovery_timeout{10000};
};

}  // namespace hvd::launcher
