#include "options/cli_options.h"

#include "hvd/common/build_info.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/tuning_defaults.h"
#include "options/option_numbers.h"

namespace hvd::launcher {

namespace {

// CLI11 writes a negated spelling as "--no-x{false}"; hvdrun's help text
// says what each spelling does and which is the default, so the mark only
// misleads (it reads as "off by default").
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option,
                               bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, positional);
    for (const char* mark : {"{false}", "{true}"}) {
      for (size_t at; (at = name.find(mark)) != std::string::npos;) {
        name.erase(at, std::char_traits<char>::length(mark));
      }
    }
    return name;
  }
};

}  // namespace

void DescribeApp(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.description(
      "hvdrun: start a distributed training job, one worker process per "
      "slot.\n\nExample: hvdrun -np 4 -H host1:2,host2:2 python3 train.py\n"
      "Options come before the command, in any order; the first word that "
      "is not an option or its value starts the command (or put -- before "
      "it). An option given twice: the last one counts.");
  // CLI11 names -np's option --num-proc in its messages.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string message = e.what();
    if (message.rfind("--num-proc:", 0) == 0) message = "-np/" + message;
    return "hvdrun: " + message + "\nRun with --help for more information.\n";
  });
}

void DefineOptions(CLI::App& app, OptionValues& v) {
  // As argparse: an option given twice keeps its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--num-proc", v.config.num_proc,
                 "Number of worker processes (also -np); default: every "
                 "listed slot")
      ->check(WholeNumber(1, kMaxProcesses));
  app.add_option("-H,--hosts", v.hosts_text,
                 "Hosts and their slots: host1:2,host2:4 (a host without "
                 ":N has 1 slot); default localhost:<np>");
  app.add_option("--hostfile", v.hostfile,
                 "File with one 'host slots=N' (or 'host:N') per line")
      ->excludes("--hosts");
  app.add_option("--launcher", v.launcher,
                 "How workers start: ssh (this machine's directly, other "
                 "hosts' over ssh), slurm (each a step of the Slurm "
                 "allocation, through srun) or local (this machine only); "
                 "default slurm inside an allocation (SLURM_JOB_ID), else "
                 "ssh")
      ->check(CLI::IsMember({"ssh", "slurm", "local"}));
  app.add_option("--network-interface,--network-interfaces",
                 v.config.network_interface,
                 "Network interfaces for the workers' traffic, "
                 "comma-separated (eth0,eth1): each host uses the first one "
                 "it has (HOROVOD_GLOO_IFACE); hvdrun checks every host has "
                 "one");
  app.add_option("--output-filename", v.config.output_dir,
                 "Also write each rank's output to DIR/rank.<rank>/stdout "
                 "and stderr; elastic jobs: each process's to "
                 "DIR/<host>.<local rank>/gen.<generation>.stdout and "
                 ".stderr");
  app.add_flag("--prefix-output-with-timestamp",
               v.config.prefix_output_with_timestamp,
               "Start every line of the workers' output with the time hvdrun "
               "read it (also -prefix-timestamp)");
  app.add_option("--status-bind", v.config.status_bind,
                 "Where the read-only status page and /metrics listen, "
                 "ADDR[:PORT] (default 127.0.0.1, any port), or 'none' for "
                 "no status server; its URL, with the read token, is "
                 "printed at start");
  app.add_option("--status-token-file", v.config.status_token_file,
                 "The status page's read token is this file's content; a "
                 "missing file is made with a new random token (mode 0600). "
                 "Keeps the URL the same across runs, for a Prometheus "
                 "scrape's credentials_file (default: a new token per run)");
  app.add_option("--rendezvous-port", v.config.rendezvous_port,
                 "The port of the rendezvous server the workers reach, for "
                 "a firewall (default 0: any free port)")
      ->check(WholeNumber(0, 65535));
  const char* etcd_group = "Rendezvous in etcd";
  app.add_option("--rendezvous-backend,--rdzv-backend", v.rendezvous_backend,
                 "Where the job's rendezvous lives: embedded (hvdrun's own "
                 "server, the default) or etcd (an etcd cluster, "
                 "--rendezvous-endpoint; its credentials as etcdctl takes "
                 "them, ETCDCTL_USER, ETCDCTL_CACERT, ...)")
      ->check(CLI::IsMember({"embedded", "etcd"}))
      ->group(etcd_group);
  app.add_option("--rendezvous-endpoint,--rdzv-endpoint",
                 v.config.rendezvous_endpoint,
                 "The etcd members, HOST:PORT[,HOST:PORT...] (https:// "
                 "before a member that speaks TLS)")
      ->group(etcd_group);
  app.add_option("--job-id,--rdzv-id", v.config.job_id,
                 "The job's name in etcd (letters, digits, '.', '_', '-'); "
                 "one hvdrun leads a job of that name at a time; default: a "
                 "new name per run")
      ->group(etcd_group);
  app.add_flag("--standby", v.config.standby,
               "Stand by for the job --job-id names: when its leading "
               "hvdrun is gone, lead it, adopting its workers (the same "
               "command line, with --job-secret-file)")
      ->group(etcd_group);
  app.add_option("--leader-lease-seconds", v.leader_lease_seconds,
                 "The lease through which one hvdrun leads the job: a "
                 "standby leads at most this long after the leader fell "
                 "silent (default " +
                     std::to_string(kDefaultLeaderLease.count()) + ")")
      ->check(CLI::Range(kMinLeaderLeaseSeconds, kMaxLeaderLeaseSeconds))
      ->group(etcd_group);
  app.add_option("--adopt-grace-seconds", v.adopt_grace_seconds,
                 "How long a worker whose hvdrun is gone or silent keeps "
                 "running for the hvdrun that leads the job next (default "
                 "0: it is stopped)")
      ->check(CLI::Range(0, 3600))
      ->group(etcd_group);
  app.add_option("--job-secret-file", v.config.job_secret_file,
                 "The job's secret is this file's content, made if missing "
                 "(mode 0600; it must be private to you): the hvdruns of one "
                 "job share it to read what the leader seals in etcd")
      ->group(etcd_group);
  app.add_flag("--verbose", v.config.verbose, "Log what the launcher does");
  app.add_flag("-v,--version", v.show_version, "Print hvd's version and exit");
  app.add_flag("--check-build", v.check_build,
               "Print what this build contains (frameworks, controllers, "
               "tensor operations) and exit (also -cb)");
  app.add_flag("--gloo", v.gloo,
               "Use Gloo for the controller and CPU collectives: hvd always "
               "does (accepted for horovodrun's command lines)");
  app.add_option("--log-level", v.log_level,
                 "trace, debug, info, warning, error or fatal; passed to "
                 "workers as HOROVOD_LOG_LEVEL");
  app.add_option("-p,--ssh-port", v.config.ssh_port, "ssh port of remote hosts")
      ->check(WholeNumber(1, 65535));
  app.add_option("-x", v.exports,
                 "NAME=VALUE: set NAME for every worker; NAME alone: give "
                 "it hvdrun's value, even where it is not forwarded "
                 "(mpirun's spelling; may be repeated)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("-i,--ssh-identity-file", v.config.ssh_identity_file,
                 "ssh identity file for remote hosts")
      ->check(CLI::ExistingFile);
  app.add_flag("--ssh-accept-new-host-keys", v.config.ssh_accept_new_host_keys,
               "Let ssh record the host key of a host it has never seen "
               "(StrictHostKeyChecking=accept-new); a host whose key "
               "changed is still refused. Without it, your ssh "
               "configuration decides");
  app.add_option("--start-timeout", v.start_timeout,
                 "Seconds workers may take to start and meet at the "
                 "rendezvous, and ssh to connect (HOROVOD_START_TIMEOUT, "
                 "default " +
                     std::to_string(kDefaultStartTimeout.count()) + ")")
      ->check(Decimal(0, false, kMaxTimeoutSeconds, "seconds"));
  app.add_option("--gloo-timeout-seconds", v.config.gloo_timeout_seconds,
                 "Timeout of Gloo operations (HOROVOD_GLOO_TIMEOUT_SECONDS, "
                 "default " +
                     std::to_string(common::kDefaultGlooTimeout.count()) + ")")
      ->check(WholeNumber(1, static_cast<int64_t>(kMaxTimeoutSeconds)));
  app.add_option("--fusion-threshold-mb", v.config.fusion_threshold_mb,
                 "Tensor fusion buffer size in MiB (HOROVOD_FUSION_THRESHOLD, "
                 "default " +
                     std::to_string(common::kDefaultFusionThreshold >> 20) +
                     ")")
      ->check(Decimal(0, true, kMaxFusionMb, "MiB"));
  app.add_option("--cycle-time-ms", v.config.cycle_time_ms,
                 "Background cycle time in ms (HOROVOD_CYCLE_TIME, default " +
                     std::to_string(common::kDefaultCycleTime.count() / 1000) +
                     ")")
      ->check(Decimal(0, false, kMaxCycleMs, "milliseconds"));
  app.add_option("--cache-capacity", v.config.cache_capacity,
                 "Response cache entries, 0 turns the response cache off "
                 "(HOROVOD_CACHE_CAPACITY, default " +
                     std::to_string(common::kDefaultCacheCapacity) + ")")
      ->check(WholeNumber(0, kMaxCount));
  app.add_flag("--disable-cache", v.disable_cache,
               "Accepted for horovodrun's command lines: there it stops "
               "caching the launcher's host checks between runs, and hvdrun "
               "never caches them (the response cache is --cache-capacity "
               "0)");
  app.add_option("--timeline-filename", v.config.timeline_filename,
                 "Write a Chrome-trace timeline here (HOROVOD_TIMELINE)");
  app.add_flag("--timeline-mark-cycles,!--no-timeline-mark-cycles",
               v.config.timeline_mark_cycles,
               "Also mark every background cycle in the timeline "
               "(HOROVOD_TIMELINE_MARK_CYCLES)");

  auto* autotune_group = "Autotune";
  app.add_flag("--autotune,!--no-autotune", v.config.autotune,
               "Tune the fusion threshold, cycle time and response cache "
               "from measured throughput, on rank 0 (HOROVOD_AUTOTUNE); "
               "--no-autotune: off")
      ->group(autotune_group);
  app.add_option("--autotune-log-file", v.config.autotune_log_file,
                 "CSV of every autotune trial and the chosen one, written by "
                 "rank 0 (HOROVOD_AUTOTUNE_LOG)")
      ->group(autotune_group);
  app.add_option("--autotune-warmup-samples", v.config.autotune_warmup_samples,
                 "Samples discarded before tuning starts "
                 "(HOROVOD_AUTOTUNE_WARMUP_SAMPLES, default 3)")
      ->check(WholeNumber(0, kMaxCount))
      ->group(autotune_group);
  app.add_option("--autotune-steps-per-sample",
                 v.config.autotune_steps_per_sample,
                 "Working cycles measured per sample "
                 "(HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE, default 10)")
      ->check(WholeNumber(1, kMaxCount))
      ->group(autotune_group);
  app.add_option("--autotune-bayes-opt-max-samples",
                 v.config.autotune_max_samples,
                 "Most parameter sets scored before the best is fixed "
                 "(HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES, default 20)")
      ->check(WholeNumber(1, kMaxCount))
      ->group(autotune_group);

  auto* stall_group = "Stall check";
  const auto max_seconds = static_cast<int64_t>(kMaxTimeoutSeconds);
  app.add_option("--stall-check-warning-time-seconds",
                 v.config.stall_check_warning_seconds,
                 "Seconds some ranks may wait for the others on a tensor "
                 "before rank 0 warns (HOROVOD_STALL_CHECK_TIME_SECONDS, "
                 "default 60)")
      ->check(WholeNumber(1, max_seconds))
      ->group(stall_group);
  app.add_option("--stall-check-shutdown-time-seconds",
                 v.config.stall_check_shutdown_seconds,
                 "Seconds of such a stall before every rank's "
                 "collectives fail; 0: never "
                 "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, default 0)")
      ->check(WholeNumber(0, max_seconds))
      ->group(stall_group);
  app.add_flag("--no-stall-check,!--stall-check", v.config.stall_check_disable,
               "Turn the stall check off (HOROVOD_STALL_CHECK_DISABLE); "
               "--stall-check: on")
      ->group(stall_group);

  auto* elastic = "Elastic mode (on with --host-discovery-script or --min-np)";
  app.add_option("--min-np,--min-num-proc", v.config.min_np,
                 "Fewest workers the job runs with; below it the job waits "
                 "up to --elastic-timeout, then fails (default: -np)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--max-np,--max-num-proc", v.config.max_np,
                 "Most workers the job runs with (default: every slot)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--slots-per-host", v.config.slots_per_host,
                 "Slots of a discovered host listed without ':N' (default 1)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--host-discovery-script", v.config.discovery_script,
                 "Executable printing the available hosts, one 'host' or "
                 "'host:slots' per line; run every --discovery-interval")
      ->check(CLI::ExistingFile)
      ->group(elastic);
  app.add_option("--elastic-timeout", v.elastic_timeout,
                 "Seconds to wait for enough slots (--min-np; -np at the "
                 "start) before the job fails (default " +
                     std::to_string(kDefaultElasticTimeout.count()) +
                     "). It never ends "
                     "a worker that is busy training: a new worker's first "
                     "check-in is bounded by --start-timeout, a running one's "
                     "by its liveness")
      ->check(Decimal(0, false, kMaxTimeoutSeconds, "seconds"))
      ->group(elastic);
  app.add_option("--reset-limit", v.config.reset_limit,
                 "Most resets (generations after the first) before the job "
                 "fails (default: no limit)")
      ->check(WholeNumber(0, kMaxResets))
      ->group(elastic);
  app.add_option("--blacklist-cooldown-range", v.cooldown,
                 "MIN MAX seconds: a host blacklisted for the n-th time is "
                 "usable again after min(MAX, MIN * 2^(n-1)) s if discovery "
                 "still lists it (default: blacklisted for good)")
      ->expected(2)
      ->allow_extra_args(false)
      // Every pair given; the last one counts (checked after parsing).
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(WholeNumber(1, max_seconds))
      ->group(elastic);
  app.add_option("--discovery-interval", v.discovery_interval,
                 "Seconds between discovery runs (default 1, or "
                 "HVD_DISCOVERY_INTERVAL)")
      ->check(
          Decimal(kMinDiscoverySeconds, true, kMaxDiscoverySeconds, "seconds"))
      ->group(elastic);

  app.add_option("--config-file", v.config_file,
                 "YAML file of settings in horovodrun's schema (params, "
                 "autotune, timeline, stall_check, library_options, logging, "
                 "controller); options on the command line win");
  app.add_flag("--tcp", v.config.tcp_only,
               "Communicate over TCP only: hvd's Gloo always does; passes "
               "NCCL_IB_DISABLE=1 to the workers, as horovodrun does");
  app.add_option("--thread-affinity", v.config.thread_affinity,
                 "CPU cores for the workers' background threads, one per "
                 "local rank, comma-separated (HOROVOD_THREAD_AFFINITY)")
      ->check(CoreList());
  v.hierarchical_allreduce_flag = app.add_flag(
      "--hierarchical-allreduce,!--no-hierarchical-allreduce",
      v.hierarchical_allreduce,
      "Allreduce through shared memory inside each host and Gloo across "
      "hosts where a host has several ranks; on by default "
      "(HOROVOD_HIERARCHICAL_ALLREDUCE)");
  v.hierarchical_allgather_flag =
      app.add_flag("--hierarchical-allgather,!--no-hierarchical-allgather",
                   v.hierarchical_allgather,
                   "The same for allgather; on by default "
                   "(HOROVOD_HIERARCHICAL_ALLGATHER)");
  app.add_option("--autotune-gaussian-process-noise",
                 v.config.autotune_gaussian_process_noise,
                 "Accepted and checked (0 to 1) for horovodrun's command "
                 "lines; no effect: hvd's autotune has no Gaussian process")
      ->check(Decimal(0, true, 1, ""))
      ->group("Autotune");
  v.log_timestamp = app.add_flag(
      "--log-with-timestamp,--no-log-hide-timestamp,!--log-without-timestamp,"
      "!--log-hide-timestamp",
      v.log_with_timestamp,
      "hvdrun's own lines and the workers' log lines with (default) or "
      "without a timestamp (HOROVOD_LOG_HIDE_TIME for the workers)");
}

}  // namespace hvd::launcher
