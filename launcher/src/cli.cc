#include "cli.h"

#include <CLI/CLI.hpp>

#include <climits>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/logging.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

Result<HostSlots> ParseHostSlots(const std::string& item,
                                 const std::string& where) {
  HostSlots host;
  size_t colon = item.rfind(':');
  host.host = item.substr(0, colon);
  if (colon != std::string::npos) {
    auto slots =
        common::ParseInt(item.substr(colon + 1),
                         where + " slots of '" + host.host + "'", 1, 1 << 16);
    if (!slots.ok()) return slots.status();
    host.slots = static_cast<int>(*slots);
  }
  if (host.host.empty() ||
      host.host.find_first_of(" \t/\\'\"$;&|") != std::string::npos) {
    return Status::InvalidArgument(where + ": '" + item +
                                   "' is not a host name or host:slots");
  }
  return host;
}

// A whole number of at least `min`, with an error that says so (CLI11's
// number checks print their bounds as 300-digit doubles).
CLI::Validator IntAtLeast(int min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        if (common::ParseInt(text, "", min, INT_MAX).ok()) return "";
        return "'" + text + "' is not a whole number >= " + std::to_string(min);
      },
      "INT>=" + std::to_string(min));
}

}  // namespace

Result<std::vector<HostSlots>> ParseHostList(const std::string& text) {
  std::vector<HostSlots> hosts;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    auto host = ParseHostSlots(item, "-H/--hosts");
    if (!host.ok()) return host.status();
    hosts.push_back(*host);
  }
  if (hosts.empty()) {
    return Status::InvalidArgument("-H/--hosts needs at least one host");
  }
  return hosts;
}

Result<std::vector<HostSlots>> ParseHostfile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return Status::InvalidArgument("--hostfile: cannot read '" + path + "'");
  }
  std::vector<HostSlots> hosts;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    std::string name, slots_word, extra;
    if (!(words >> name)) continue;
    std::string where = path + ":" + std::to_string(number);
    if (words >> slots_word) {
      if (slots_word.rfind("slots=", 0) != 0 || (words >> extra)) {
        return Status::InvalidArgument(
            where + ": expected 'host slots=N', got '" + line + "'");
      }
      name += ":" + slots_word.substr(6);
    }
    auto host = ParseHostSlots(name, where);
    if (!host.ok()) return host.status();
    hosts.push_back(*host);
  }
  if (hosts.empty()) {
    return Status::InvalidArgument("--hostfile '" + path + "' lists no hosts");
  }
  return hosts;
}

CliOutcome ParseCommandLine(const std::vector<std::string>& args) {
  CLI::App app{
      "hvdrun: start a distributed training job, one worker process per "
      "slot.\n\nExample: hvdrun -np 4 -H host1:2,host2:2 python train.py",
      "hvdrun"};
  app.prefix_command();  // everything from the first positional on is the
                         // command, its own flags included
  LaunchConfig config;
  std::string hosts_text, hostfile, log_level;
  double start_timeout = 30;
  app.add_option("--num-proc", config.num_proc,
                 "Number of worker processes (also -np); default: every "
                 "listed slot")
      ->check(CLI::PositiveNumber);
  app.add_option("-H,--hosts", hosts_text,
                 "Hosts and their slots: host1:2,host2:4 (a host without "
                 ":N has 1 slot); default localhost:<np>");
  app.add_option("--hostfile", hostfile,
                 "File with one 'host slots=N' (or 'host:N') per line")
      ->excludes("--hosts");
  app.add_option("--network-interface", config.network_interface,
                 "Network interface for Gloo's traffic (HOROVOD_GLOO_IFACE)");
  app.add_option("--output-filename", config.output_dir,
                 "Also write each rank's output to DIR/rank.<rank>/stdout "
                 "and stderr");
  app.add_flag("--verbose", config.verbose, "Log what the launcher does");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warning, error or fatal; passed to "
                 "workers as HOROVOD_LOG_LEVEL");
  app.add_option("-p,--ssh-port", config.ssh_port, "ssh port of remote hosts")
      ->check(CLI::Range(1, 65535));
  app.add_option("-i,--ssh-identity-file", config.ssh_identity_file,
                 "ssh identity file for remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--start-timeout", start_timeout,
                 "Seconds workers may take to start and meet at the "
                 "rendezvous (HOROVOD_START_TIMEOUT)")
      ->check(CLI::PositiveNumber);
  app.add_option("--gloo-timeout-seconds", config.gloo_timeout_seconds,
                 "Timeout of Gloo operations (HOROVOD_GLOO_TIMEOUT_SECONDS)")
      ->check(CLI::PositiveNumber);
  app.add_option("--fusion-threshold-mb", config.fusion_threshold_mb,
                 "Tensor fusion buffer size in MiB (HOROVOD_FUSION_THRESHOLD)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cycle-time-ms", config.cycle_time_ms,
                 "Background cycle time in ms (HOROVOD_CYCLE_TIME)")
      ->check(CLI::PositiveNumber);
  auto* cache_capacity =
      app.add_option("--cache-capacity", config.cache_capacity,
                     "Response cache entries, 0 disables "
                     "(HOROVOD_CACHE_CAPACITY)")
          ->check(CLI::NonNegativeNumber);
  bool disable_cache = false;
  app.add_flag("--disable-cache", disable_cache,
               "Turn the response cache off (HOROVOD_CACHE_CAPACITY=0)")
      ->excludes(cache_capacity);
  app.add_option("--timeline-filename", config.timeline_filename,
                 "Write a Chrome-trace timeline here (HOROVOD_TIMELINE)");
  app.add_flag("--timeline-mark-cycles", config.timeline_mark_cycles,
               "Also mark every background cycle in the timeline "
               "(HOROVOD_TIMELINE_MARK_CYCLES)");

  auto* autotune_group = "Autotune";
  auto* autotune =
      app.add_flag("--autotune", config.autotune,
                   "Tune the fusion threshold, cycle time and response cache "
                   "from measured throughput, on rank 0 (HOROVOD_AUTOTUNE)")
          ->group(autotune_group);
  app.add_option("--autotune-log-file", config.autotune_log_file,
                 "CSV of every autotune trial and the chosen one, written by "
                 "rank 0 (HOROVOD_AUTOTUNE_LOG)")
      ->needs(autotune)
      ->group(autotune_group);
  app.add_option("--autotune-warmup-samples", config.autotune_warmup_samples,
                 "Samples discarded before tuning starts "
                 "(HOROVOD_AUTOTUNE_WARMUP_SAMPLES, default 3)")
      ->check(IntAtLeast(0))
      ->needs(autotune)
      ->group(autotune_group);
  app.add_option("--autotune-steps-per-sample",
                 config.autotune_steps_per_sample,
                 "Working cycles measured per sample "
                 "(HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE, default 10)")
      ->check(IntAtLeast(1))
      ->needs(autotune)
      ->group(autotune_group);
  app.add_option("--autotune-bayes-opt-max-samples",
                 config.autotune_max_samples,
                 "Most parameter sets scored before the best is fixed "
                 "(HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES, default 20)")
      ->check(IntAtLeast(1))
      ->needs(autotune)
      ->group(autotune_group);

  auto* stall_group = "Stall check";
  auto* stall_warning =
      app.add_option("--stall-check-warning-time-seconds",
                     config.stall_check_warning_seconds,
                     "Seconds some ranks may wait for the others on a tensor "
                     "before rank 0 warns (HOROVOD_STALL_CHECK_TIME_SECONDS, "
                     "default 60)")
          ->check(IntAtLeast(1))
          ->group(stall_group);
  auto* stall_shutdown =
      app.add_option("--stall-check-shutdown-time-seconds",
                     config.stall_check_shutdown_seconds,
                     "Seconds of such a stall before every rank's "
                     "collectives fail; 0: never "
                     "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, default 0)")
          ->check(IntAtLeast(0))
          ->group(stall_group);
  app.add_flag("--no-stall-check", config.stall_check_disable,
               "Turn the stall check off (HOROVOD_STALL_CHECK_DISABLE)")
      ->excludes(stall_warning)
      ->excludes(stall_shutdown)
      ->group(stall_group);

  auto* elastic = "Elastic mode (on with --host-discovery-script or --min-np)";
  app.add_option("--min-np", config.min_np,
                 "Fewest workers the job runs with; below it the job waits "
                 "up to --elastic-timeout, then fails (default: -np)")
      ->check(CLI::PositiveNumber)
      ->group(elastic);
  app.add_option("--max-np", config.max_np,
                 "Most workers the job runs with (default: every slot)")
      ->check(CLI::PositiveNumber)
      ->group(elastic);
  app.add_option("--slots-per-host", config.slots_per_host,
                 "Slots of a discovered host listed without ':N' (default 1)")
      ->check(CLI::PositiveNumber)
      ->group(elastic);
  app.add_option("--host-discovery-script", config.discovery_script,
                 "Executable printing the available hosts, one 'host' or "
                 "'host:slots' per line; run every --discovery-interval")
      ->check(CLI::ExistingFile)
      ->group(elastic);
  double elastic_timeout = 600, discovery_interval = -1;
  app.add_option("--elastic-timeout", elastic_timeout,
                 "Seconds to wait for enough slots (at the start, after a "
                 "failure) and for every slot to check in (default 600)")
      ->check(CLI::PositiveNumber)
      ->group(elastic);
  app.add_option("--reset-limit", config.reset_limit,
                 "Most resets (generations after the first) before the job "
                 "fails (default: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->group(elastic);
  std::vector<int> cooldown;
  app.add_option("--blacklist-cooldown-range", cooldown,
                 "MIN MAX seconds: a host blacklisted for the n-th time is "
                 "usable again after min(MAX, MIN * 2^(n-1)) s if discovery "
                 "still lists it (default: blacklisted for good)")
      ->expected(2)
      ->allow_extra_args(false)
      ->check(CLI::PositiveNumber)
      ->group(elastic);
  app.add_option("--discovery-interval", discovery_interval,
                 "Seconds between discovery runs (default 1, or "
                 "HVD_DISCOVERY_INTERVAL)")
      ->check(CLI::PositiveNumber)
      ->group(elastic);

  // horovodrun spells the process count "-np", which CLI11 cannot take as a
  // short option; rewrite it before the command starts.
  std::vector<std::string> argv_rest(args.begin() + 1, args.end());
  for (auto& arg : argv_rest) {
    if (arg == "-np") {
      arg = "--num-proc";
    } else if (!arg.empty() && arg[0] != '-') {
      break;
    }
  }
  std::vector<std::string> reversed(argv_rest.rbegin(), argv_rest.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e) == 0 ? 0 : 2};
  }
  auto fail = [](const Status& status) -> CliOutcome {
    std::cerr << "hvdrun: " << status.message() << "\n"
              << "Run with --help for more information.\n";
    return {std::nullopt, 2};
  };
  config.command = app.remaining();
  if (disable_cache) config.cache_capacity = 0;
  if (config.stall_check_warning_seconds &&
      config.stall_check_shutdown_seconds.value_or(0) > 0 &&
      *config.stall_check_shutdown_seconds <
          *config.stall_check_warning_seconds) {
    return fail(Status::InvalidArgument(
        "--stall-check-shutdown-time-seconds (" +
        std::to_string(*config.stall_check_shutdown_seconds) +
        ") must not be less than --stall-check-warning-time-seconds (" +
        std::to_string(*config.stall_check_warning_seconds) + ")"));
  }
  config.elastic = !config.discovery_script.empty() || config.min_np > 0;
  config.elastic_timeout =
      std::chrono::seconds(static_cast<int64_t>(elastic_timeout + 0.999));
  if (!cooldown.empty()) {
    if (cooldown[0] > cooldown[1]) {
      return fail(Status::InvalidArgument(
          "--blacklist-cooldown-range MIN MAX needs MIN <= MAX"));
    }
    config.cooldown_range = std::make_pair(cooldown[0], cooldown[1]);
  }
  auto discovery_timeout = common::GetEnvSeconds(
      common::env_vars::kHvdDiscoveryTimeout, config.discovery_timeout);
  if (!discovery_timeout.ok()) return fail(discovery_timeout.status());
  config.discovery_timeout = *discovery_timeout;
  if (discovery_interval < 0) {
    auto from_env = common::GetEnvSeconds(
        common::env_vars::kHvdDiscoveryInterval, config.discovery_interval);
    if (!from_env.ok()) return fail(from_env.status());
    config.discovery_interval = *from_env;
  } else {
    config.discovery_interval = std::chrono::milliseconds(
        static_cast<int64_t>(discovery_interval * 1000));
  }
  if (config.command.empty()) {
    return fail(Status::InvalidArgument(
        "no command to run; usage: hvdrun [options] COMMAND [ARGS...]"));
  }
  if (!log_level.empty()) {
    auto level = common::ParseLogLevel(log_level, "--log-level");
    if (!level.ok()) return fail(level.status());
    config.log_level = log_level;
  }
  config.start_timeout =
      std::chrono::seconds(static_cast<int64_t>(start_timeout + 0.999));
  if (!hosts_text.empty()) {
    auto hosts = ParseHostList(hosts_text);
    if (!hosts.ok()) return fail(hosts.status());
    config.hosts = *hosts;
  } else if (!hostfile.empty()) {
    auto hosts = ParseHostfile(hostfile);
    if (!hosts.ok()) return fail(hosts.status());
    config.hosts = *hosts;
  } else if (config.discovery_script.empty()) {
    if (config.num_proc == 0) {
      return fail(Status::InvalidArgument(
          "give -np, or hosts with -H/--hosts or --hostfile"));
    }
    config.hosts = {{"localhost", config.num_proc}};
  }
  if (config.elastic) {
    if (!config.discovery_script.empty() && !config.hosts.empty()) {
      return fail(Status::InvalidArgument(
          "--host-discovery-script and -H/--hostfile exclude each other"));
    }
    if (config.num_proc == 0) {
      if (config.min_np == 0) {
        return fail(Status::InvalidArgument(
            "elastic mode needs -np (or --min-np): the slots to wait for "
            "before the start"));
      }
      config.num_proc = config.min_np;
    }
    if (config.min_np == 0) config.min_np = config.num_proc;
    if (config.min_np > config.num_proc) {
      return fail(Status::InvalidArgument("--min-np must not exceed -np"));
    }
    if (config.max_np != 0 && config.max_np < config.num_proc) {
      return fail(Status::InvalidArgument("--max-np must be at least -np"));
    }
    return {std::move(config), 0};
  }
  int slots = 0;
  for (const auto& host : config.hosts) slots += host.slots;
  if (config.num_proc == 0) config.num_proc = slots;
  if (config.num_proc > slots) {
    return fail(
        Status::InvalidArgument("-np " + std::to_string(config.num_proc) +
                                " needs more slots than the " +
                                std::to_string(slots) + " the hosts offer"));
  }
  return {std::move(config), 0};
}

}  // namespace hvd::launcher
