#include "options/cli.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <utility>

#include "hvd/common/build_info.h"
#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/logging.h"
#include "hvd/rendezvous/etcd_client.h"
#include "job/host_slots.h"
#include "options/argv_split.h"
#include "options/cli_options.h"
#include "options/config_file.h"
#include "options/option_numbers.h"
#include "process/spawner.h"
#include "slurm/slurm_allocation.h"
#include "slurm/slurm_jobs.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

// Seconds from the environment (a discovery setting by default), checked
// like a flag.
Result<std::chrono::milliseconds> DiscoverySecondsFromEnv(
    const char* name, std::chrono::milliseconds fallback,
    double min = kMinDiscoverySeconds, double max = kMaxDiscoverySeconds) {
  auto text = common::GetEnv(name);
  if (!text) return fallback;
  std::string why = CheckDecimal(*text, min, true, max, "seconds");
  if (!why.empty()) {
    return Status::InvalidArgument(std::string("environment variable ") + name +
                                   ": " + why);
  }
  return Milliseconds(std::strtod(text->c_str(), nullptr));
}

// -x NAME=VALUE, or -x NAME for hvdrun's own value of NAME.
Result<std::pair<std::string, std::string>> ParseExport(
    const std::string& text) {
  const size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  bool valid =
      !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  }
  if (!valid) {
    return Status::InvalidArgument("-x " + Quoted(text) +
                                   ": a variable's name is letters, digits "
                                   "and _, not starting with a digit");
  }
  if (eq != std::string::npos) return std::make_pair(name, text.substr(eq + 1));
  auto value = common::GetEnv(name.c_str());
  if (!value) {
    return Status::InvalidArgument("-x " + name + ": " + name +
                                   " is not set in hvdrun's environment; "
                                   "give -x " +
                                   name + "=VALUE");
  }
  return std::make_pair(name, *value);
}

// Rules between options, checked once the file and the command line are
// both in.
Status CheckCombinations(const LaunchConfig& config) {
  if (!config.autotune) {
    for (auto [given, name] :
         {std::pair{!config.autotune_log_file.empty(), "--autotune-log-file"},
          std::pair{config.autotune_warmup_samples.has_value(),
                    "--autotune-warmup-samples"},
          std::pair{config.autotune_steps_per_sample.has_value(),
                    "--autotune-steps-per-sample"},
          std::pair{config.autotune_max_samples.has_value(),
                    "--autotune-bayes-opt-max-samples"}}) {
      if (given) {
        return Status::InvalidArgument(std::string(name) + " needs --autotune");
      }
    }
  }
  if (config.stall_check_disable) {
    for (auto [given, name] :
         {std::pair{config.stall_check_warning_seconds.has_value(),
                    "--stall-check-warning-time-seconds"},
          std::pair{config.stall_check_shutdown_seconds.has_value(),
                    "--stall-check-shutdown-time-seconds"}}) {
      if (given) {
        return Status::InvalidArgument(std::string(name) +
                                       " has no effect with --no-stall-check");
      }
    }
  }
  // horovodrun's form, "eth0,eth1": each host uses the first it has.
  const std::string& interfaces = config.network_interface;
  if (!interfaces.empty() &&
      (interfaces.find_first_of(" \t\n") != std::string::npos ||
       interfaces.find(",,") != std::string::npos ||
       interfaces.front() == ',' || interfaces.back() == ',')) {
    return Status::InvalidArgument(
        "--network-interfaces " + Quoted(interfaces) +
        ": not a comma-separated list of interface names (eth0,eth1)");
  }
  return Status::Ok();
}

// --rendezvous-backend, --rendezvous-endpoint and --job-id, which mean
// something only together.
Status ResolveRendezvous(const OptionValues& v, LaunchConfig& config) {
  const bool etcd = v.rendezvous_backend == "etcd";
  config.rendezvous_backend =
      etcd ? RendezvousBackend::kEtcd : RendezvousBackend::kEmbedded;
  if (!etcd) {
    for (auto [given, name] :
         {std::pair{!config.rendezvous_endpoint.empty(),
                    "--rendezvous-endpoint"},
          std::pair{!config.job_id.empty(), "--job-id"},
          std::pair{!config.job_secret_file.empty(), "--job-secret-file"},
          std::pair{v.adopt_grace_seconds > 0, "--adopt-grace-seconds"},
          std::pair{v.leader_lease_seconds.has_value(),
                    "--leader-lease-seconds"},
          std::pair{config.standby, "--standby"}}) {
      if (given) {
        return Status::InvalidArgument(
            std::string(name) +
            " names etcd's side of a job; it needs --rendezvous-backend etcd");
      }
    }
    return Status::Ok();
  }
  if (config.standby &&
      (config.job_id.empty() || config.job_secret_file.empty())) {
    return Status::InvalidArgument(
        "--standby needs the job's --job-id and --job-secret-file: it takes "
        "over that job, and reads what its leader sealed with that secret");
  }
  config.adopt_grace = std::chrono::seconds(v.adopt_grace_seconds);
  if (v.leader_lease_seconds) {
    config.leader_lease = std::chrono::seconds(*v.leader_lease_seconds);
  }
  if (config.adopt_grace.count() > 0 && config.launcher == Launcher::kSlurm) {
    return Status::InvalidArgument(
        "--adopt-grace-seconds: Slurm ends a worker step whose srun is "
        "gone, so no step can wait to be adopted; run the workers over ssh "
        "(--launcher ssh) to keep them past hvdrun");
  }
  if (config.rendezvous_endpoint.empty()) {
    return Status::InvalidArgument(
        "--rendezvous-backend etcd needs --rendezvous-endpoint "
        "HOST:PORT[,HOST:PORT...], the etcd members");
  }
  auto endpoints = rendezvous::ParseEtcdEndpoints(config.rendezvous_endpoint);
  if (!endpoints.ok()) {
    return endpoints.status().WithContext("--rendezvous-endpoint");
  }
  const std::string& id = config.job_id;
  bool id_ok = id.size() <= 128 && (id.empty() || id[0] != '.');
  for (char c : id) {
    id_ok = id_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                      c == '_' || c == '-');
  }
  if (!id_ok) {
    return Status::InvalidArgument(
        "--job-id " + Quoted(id) +
        ": a job id is 1 to 128 letters, digits, '.', '_' and '-', not "
        "starting with '.'");
  }
  return Status::Ok();
}

// Inside a Slurm allocation: the launcher (slurm unless --launcher says
// otherwise), the allocation, and, without -H, --hostfile or a discovery
// script, the hosts (under slurm or ssh): the allocation's nodes, or in
// elastic mode (--min-np) hvd-slurm-discover beside hvdrun, which adds
// companion jobs' nodes.
Status ApplySlurmAllocation(const OptionValues& v, LaunchConfig& config) {
  auto job = common::GetEnv("SLURM_JOB_ID");
  const bool inside = job.has_value() && !job->empty();
  if (v.launcher.empty()) {
    config.launcher = inside ? Launcher::kSlurm : Launcher::kSsh;
  } else {
    config.launcher = v.launcher == "slurm"   ? Launcher::kSlurm
                      : v.launcher == "local" ? Launcher::kLocal
                                              : Launcher::kSsh;
  }
  const bool hosts_given = !v.hosts_text.empty() || !v.hostfile.empty() ||
                           !config.discovery_script.empty();
  // local: this machine's slots only (localhost:<np> unless -H says
  // otherwise); ssh: the allocation's nodes when no hosts are given.
  if (config.launcher == Launcher::kLocal ||
      (config.launcher == Launcher::kSsh && (hosts_given || !inside))) {
    return Status::Ok();
  }
  auto allocation = AllocationFromEnvironment(ProcessEnvironment());
  if (!allocation.ok()) return allocation.status();
  if (!allocation->has_value()) {
    return Status::InvalidArgument(
        "--launcher slurm needs a Slurm allocation (SLURM_JOB_ID is unset): "
        "run hvdrun inside sbatch or salloc");
  }
  config.slurm = std::move(**allocation);
  if (!hosts_given && config.min_np > 0) {
    auto self = SelfExecutable();
    if (!self.ok()) return self.status();
    config.discovery_script =
        self->substr(0, self->rfind('/') + 1) + kSlurmDiscoveryScript;
  }
  return Status::Ok();
}

// The last --config-file among the options (CLI11 has not parsed yet).
std::optional<std::string> ConfigFileOf(const std::vector<std::string>& words) {
  const std::string flag = "--config-file";
  std::optional<std::string> path;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == flag && i + 1 < words.size()) path = words[i + 1];
    if (words[i].rfind(flag + "=", 0) == 0)
      path = words[i].substr(flag.size() + 1);
  }
  return path;
}

// Parses one setting of the file alone, so that a bad value is reported
// with the file and key rather than as the option it became.
Status CheckFileSetting(const FileSetting& setting, const std::string& path) {
  const std::string where = "--config-file " + path + ": " + setting.key;
  CLI::App app;
  OptionValues scratch;
  DefineOptions(app, scratch);
  std::vector<std::string> reversed(setting.words.rbegin(),
                                    setting.words.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string why = e.what();
    const std::string option =
        setting.words[0].substr(0, setting.words[0].find('='));
    if (why.rfind(option + ": ", 0) == 0) why = why.substr(option.size() + 2);
    return Status::InvalidArgument(where + ": " + why);
  }
  if (!scratch.log_level.empty()) {
    auto level = common::ParseLogLevel(scratch.log_level, where);
    if (!level.ok()) return level.status();
  }
  return Status::Ok();
}

}  // namespace

CliOutcome ParseCommandLine(const std::vector<std::string>& args) {
  auto fail = [](const Status& status) -> CliOutcome {
    std::cerr << "hvdrun: " << status.message() << "\n"
              << "Run with --help for more information.\n";
    return {std::nullopt, 2};
  };
  CLI::App app{"", "hvdrun"};
  DescribeApp(app);
  OptionValues v;
  DefineOptions(app, v);
  SplitArgs split = SplitAtCommand(
      app, std::vector<std::string>(args.begin() + 1, args.end()));
  if (!split.error.empty()) return fail(Status::InvalidArgument(split.error));
  // The file's settings come first, so the command line's win.
  std::vector<std::string> words;
  if (auto path = ConfigFileOf(split.options)) {
    auto settings = ReadConfigFile(*path);
    if (!settings.ok()) return fail(settings.status());
    for (const auto& setting : *settings) {
      Status checked = CheckFileSetting(setting, *path);
      if (!checked.ok()) return fail(checked);
      words.insert(words.end(), setting.words.begin(), setting.words.end());
    }
  }
  words.insert(words.end(), split.options.begin(), split.options.end());
  std::vector<std::string> reversed(words.rbegin(), words.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e) == 0 ? 0 : 2};
  }
  if (v.show_version || v.check_build) {
    const common::BuildInfo info = common::GetBuildInfo();
    std::cout << (v.show_version ? info.version + "\n"
                                 : common::CheckBuildReport(info));
    return {std::nullopt, 0};
  }
  LaunchConfig& config = v.config;
  if (v.log_timestamp->count() > 0)
    config.log_hide_time = !v.log_with_timestamp;
  if (v.hierarchical_allreduce_flag->count() > 0) {
    config.hierarchical_allreduce = v.hierarchical_allreduce;
  }
  if (v.hierarchical_allgather_flag->count() > 0) {
    config.hierarchical_allgather = v.hierarchical_allgather;
  }
  if (Status checked = CheckCombinations(config); !checked.ok()) {
    return fail(checked);
  }
  config.command = std::move(split.command);
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
  auto slurm = ApplySlurmAllocation(v, config);
  if (!slurm.ok()) return fail(slurm);
  if (Status rendezvous = ResolveRendezvous(v, config); !rendezvous.ok()) {
    return fail(rendezvous);
  }
  config.elastic = !config.discovery_script.empty() || config.min_np > 0;
  config.elastic_timeout = Milliseconds(v.elastic_timeout);
  config.start_timeout = CeilSeconds(v.start_timeout);
  if (v.cooldown.size() % 2 != 0) {
    return fail(Status::InvalidArgument(
        "--blacklist-cooldown-range needs two values, MIN MAX"));
  }
  if (v.cooldown.size() > 2)
    v.cooldown.erase(v.cooldown.begin(), v.cooldown.end() - 2);
  if (!v.cooldown.empty()) {
    if (v.cooldown[0] > v.cooldown[1]) {
      return fail(Status::InvalidArgument(
          "--blacklist-cooldown-range MIN MAX needs MIN <= MAX, got " +
          std::to_string(v.cooldown[0]) + " " + std::to_string(v.cooldown[1])));
    }
    config.cooldown_range = std::make_pair(v.cooldown[0], v.cooldown[1]);
  }
  auto discovery_timeout = DiscoverySecondsFromEnv(
      common::env_vars::kHvdDiscoveryTimeout, config.discovery_timeout);
  if (!discovery_timeout.ok()) return fail(discovery_timeout.status());
  config.discovery_timeout = *discovery_timeout;
  if (v.discovery_interval) {
    config.discovery_interval = Milliseconds(*v.discovery_interval);
  } else {
    auto from_env = DiscoverySecondsFromEnv(
        common::env_vars::kHvdDiscoveryInterval, config.discovery_interval);
    if (!from_env.ok()) return fail(from_env.status());
    config.discovery_interval = *from_env;
  }
  auto silence =
      DiscoverySecondsFromEnv(common::env_vars::kHvdRemoteSilenceSeconds,
                              config.remote_silence, 1, kMaxDiscoverySeconds);
  if (!silence.ok()) return fail(silence.status());
  config.remote_silence = *silence;
  for (const std::string& exported : v.exports) {
    auto variable = ParseExport(exported);
    if (!variable.ok()) return fail(variable.status());
    config.extra_env.push_back(*variable);
  }
  if (config.command.empty()) {
    return fail(Status::InvalidArgument(
        "no command to run; usage: hvdrun [options] COMMAND [ARGS...]"));
  }
  if (!v.log_level.empty()) {
    auto level = common::ParseLogLevel(v.log_level, "--log-level");
    if (!level.ok()) return fail(level.status());
    config.log_level = v.log_level;
  }
  if (!v.hosts_text.empty()) {
    auto hosts = ParseHostList(v.hosts_text);
    if (!hosts.ok()) return fail(hosts.status());
    config.hosts = *hosts;
  } else if (!v.hostfile.empty()) {
    auto hosts = ParseHostfile(v.hostfile);
    if (!hosts.ok()) return fail(hosts.status());
    config.hosts = *hosts;
  } else if (config.slurm && config.discovery_script.empty()) {
    config.hosts = config.slurm->nodes;
  } else if (config.discovery_script.empty()) {
    if (config.num_proc == 0) {
      return fail(Status::InvalidArgument(
          "give -np, or hosts with -H/--hosts or --hostfile"));
    }
    config.hosts = {{"localhost", config.num_proc}};
  }
  if (config.max_np != 0) {
    if (config.min_np > config.max_np) {
      return fail(Status::InvalidArgument(
          "--min-np " + std::to_string(config.min_np) +
          " must not exceed --max-np " + std::to_string(config.max_np)));
    }
    if (config.num_proc > config.max_np) {
      return fail(Status::InvalidArgument(
          "-np " + std::to_string(config.num_proc) +
          " must not exceed --max-np " + std::to_string(config.max_np)));
    }
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
      return fail(Status::InvalidArgument(
          "--min-np " + std::to_string(config.min_np) +
          " must not exceed -np " + std::to_string(config.num_proc)));
    }
    return {std::move(config), 0};
  }
  int64_t slots = 0;
  for (const auto& host : config.hosts) slots += host.slots;
  if (config.num_proc == 0) {
    if (slots > kMaxProcesses) {
      return fail(Status::InvalidArgument(
          "the hosts offer " + std::to_string(slots) +
          " slots; give -np (at most " + std::to_string(kMaxProcesses) + ")"));
    }
    config.num_proc = static_cast<int>(slots);
  }
  if (config.num_proc > slots) {
    const bool from_slurm =
        config.slurm && v.hosts_text.empty() && v.hostfile.empty();
    return fail(Status::InvalidArgument(
        "-np " + std::to_string(config.num_proc) +
        " needs more slots than the " + std::to_string(slots) +
        (from_slurm ? " the Slurm allocation offers (one per task: ask sbatch "
                      "for more with --ntasks-per-node or -n)"
                    : " the hosts offer")));
  }
  return {std::move(config), 0};
}

}  // namespace hvd::launcher
