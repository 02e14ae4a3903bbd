#include "cli.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "hvd/common/build_info.h"
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

// The value as the user typed it, cut short if it is long, for messages.
std::string Quoted(const std::string& text) {
  constexpr size_t kShown = 40;
  if (text.size() <= kShown) return "'" + text + "'";
  return "'" + text.substr(0, kShown) + "...'";
}

// A bound of a number flag: a whole number or a short decimal.
std::string Plain(double bound) {
  if (bound == std::floor(bound)) {
    return std::to_string(static_cast<int64_t>(bound));
  }
  std::ostringstream out;
  out << bound;
  return out.str();
}

// "" when `text` is a whole number in [min, max], written plainly: an
// optional minus sign and digits, nothing around them. Otherwise the
// reason, naming the value as typed and the range.
std::string CheckWholeNumber(const std::string& text, int64_t min,
                             int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || stop != end || error != std::errc() || value < min ||
      value > max) {
    return Quoted(text) + " is not a whole number from " + std::to_string(min) +
           " to " + std::to_string(max);
  }
  return "";
}

// "" when `text` is a finite decimal number (fractions and exponents
// allowed; no nan, inf or hex) above `min` (or from `min`, when
// `min_included`) and at most `max`.
std::string CheckDecimal(const std::string& text, double min, bool min_included,
                         double max, const std::string& unit) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  bool in_range = min_included ? value >= min : value > min;
  if (text.empty() || stop != end || error != std::errc() ||
      !std::isfinite(value) || !in_range || value > max) {
    return Quoted(text) + " is not a number of " + unit +
           (min_included ? " from " : " above ") + Plain(min) +
           (min_included ? " to " : " and at most ") + Plain(max);
  }
  return "";
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) {
        return CheckWholeNumber(text, min, max);
      },
      "in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

CLI::Validator Decimal(double min, bool min_included, double max,
                       const std::string& unit) {
  return CLI::Validator(
      [=](std::string& text) {
        return CheckDecimal(text, min, min_included, max, unit);
      },
      unit + " in " + (min_included ? "[" : "(") + Plain(min) + ", " +
          Plain(max) + "]");
}

// Bounds of the number flags. Each keeps the value far from where a
// conversion could overflow, and within what the worker accepts from the
// environment variable the flag sets (runtime/src/config.cc).
constexpr int64_t kMaxProcesses = 65536;
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;  // a week
constexpr double kMaxDiscoverySeconds = 3600;
// Below this a discovery interval or timeout would be a busy loop.
constexpr double kMinDiscoverySeconds = 0.01;
constexpr int64_t kMaxCount = 1 << 20;    // cache entries, autotune samples
constexpr double kMaxFusionMb = 1 << 20;  // HOROVOD_FUSION_THRESHOLD <= 2^40
constexpr double kMaxCycleMs = 60000;
constexpr int64_t kMaxResets = 1000000;

// Whole seconds for the workers' environment, rounded up so that a
// fraction never becomes 0.
std::chrono::seconds CeilSeconds(double seconds) {
  return std::chrono::seconds(static_cast<int64_t>(std::ceil(seconds)));
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

// A discovery setting from the environment, checked like the flag.
Result<std::chrono::milliseconds> DiscoverySecondsFromEnv(
    const char* name, std::chrono::milliseconds fallback) {
  auto text = common::GetEnv(name);
  if (!text) return fallback;
  std::string why = CheckDecimal(*text, kMinDiscoverySeconds, true,
                                 kMaxDiscoverySeconds, "seconds");
  if (!why.empty()) {
    return Status::InvalidArgument(std::string("environment variable ") + name +
                                   ": " + why);
  }
  return Milliseconds(std::strtod(text->c_str(), nullptr));
}

// Splits the arguments after the program name the way horovodrun's
// argparse does with its REMAINDER command: options (in any order, each
// with its values) come first; the first word that is neither an option nor
// an option's value starts the command, and "--" may mark that start.
// Everything from there on is the command's, its own flags included.
// CLI11 has no such positional, so the split is made here from CLI11's own
// table of how many values each option takes; CLI11 then parses the options
// alone, so an unknown option is an error rather than the command.
// horovodrun's single-dash words of several letters, which CLI11 would read
// as a cluster of one-letter options, become their long names.
struct SplitArgs {
  std::vector<std::string> options;
  std::vector<std::string> command;
};

constexpr std::pair<const char*, const char*> kSingleDashWords[] = {
    {"-np", "--num-proc"},
    {"-cb", "--check-build"},
    {"-hostfile", "--hostfile"}};

// "-x", "--x"; not "-", "-1" or "-.5" (a value).
bool LooksLikeOption(const std::string& word) {
  return word.size() >= 2 && word[0] == '-' &&
         !std::isdigit(static_cast<unsigned char>(word[1])) && word[1] != '.';
}

SplitArgs SplitAtCommand(const CLI::App& app,
                         const std::vector<std::string>& args) {
  SplitArgs split;
  size_t i = 0;
  while (i < args.size()) {
    std::string word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (!LooksLikeOption(word)) break;  // the command
    ++i;
    for (const auto& [dash, long_name] : kSingleDashWords) {
      const std::string spelled = dash;
      if (word == spelled || word.rfind(spelled + "=", 0) == 0) {
        word = std::string(long_name) + word.substr(spelled.size());
        break;
      }
    }
    split.options.push_back(word);
    if (word.find('=') != std::string::npos) continue;  // --flag=value
    // An unknown option (or one with its value attached, "-p22") takes no
    // separate value; CLI11 reports the unknown ones. As in argparse and
    // CLI11, an option's values end early at the next option; CLI11 then
    // reports the missing value.
    const CLI::Option* option = app.get_option_no_throw(word);
    int values = option ? option->get_items_expected_max() : 0;
    for (int v = 0; v < values && i < args.size() && !LooksLikeOption(args[i]);
         ++v) {
      split.options.push_back(args[i++]);
    }
  }
  split.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i),
                       args.end());
  return split;
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
      "slot.\n\nExample: hvdrun -np 4 -H host1:2,host2:2 python train.py\n"
      "Options come before the command, in any order; the first word that "
      "is not an option or its value starts the command (or put -- before "
      "it).",
      "hvdrun"};
  // CLI11 names -np's option --num-proc in its messages.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string message = e.what();
    if (message.rfind("--num-proc:", 0) == 0) message = "-np/" + message;
    return "hvdrun: " + message + "\nRun with --help for more information.\n";
  });
  LaunchConfig config;
  std::string hosts_text, hostfile, log_level;
  double start_timeout = 30;
  app.add_option("--num-proc", config.num_proc,
                 "Number of worker processes (also -np); default: every "
                 "listed slot")
      ->check(WholeNumber(1, kMaxProcesses));
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
  bool show_version = false, check_build = false, gloo = false;
  app.add_flag("-v,--version", show_version, "Print hvd's version and exit");
  app.add_flag("--check-build", check_build,
               "Print what this build contains (frameworks, controllers, "
               "tensor operations) and exit (also -cb)");
  app.add_flag("--gloo", gloo,
               "Use Gloo for the controller and CPU collectives: hvd always "
               "does (accepted for horovodrun's command lines)");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warning, error or fatal; passed to "
                 "workers as HOROVOD_LOG_LEVEL");
  app.add_option("-p,--ssh-port", config.ssh_port, "ssh port of remote hosts")
      ->check(WholeNumber(1, 65535));
  app.add_option("-i,--ssh-identity-file", config.ssh_identity_file,
                 "ssh identity file for remote hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--start-timeout", start_timeout,
                 "Seconds workers may take to start and meet at the "
                 "rendezvous, and ssh to connect (HOROVOD_START_TIMEOUT, "
                 "default 30)")
      ->check(Decimal(0, false, kMaxTimeoutSeconds, "seconds"));
  app.add_option("--gloo-timeout-seconds", config.gloo_timeout_seconds,
                 "Timeout of Gloo operations (HOROVOD_GLOO_TIMEOUT_SECONDS)")
      ->check(WholeNumber(1, static_cast<int64_t>(kMaxTimeoutSeconds)));
  app.add_option("--fusion-threshold-mb", config.fusion_threshold_mb,
                 "Tensor fusion buffer size in MiB (HOROVOD_FUSION_THRESHOLD)")
      ->check(Decimal(0, true, kMaxFusionMb, "MiB"));
  app.add_option("--cycle-time-ms", config.cycle_time_ms,
                 "Background cycle time in ms (HOROVOD_CYCLE_TIME)")
      ->check(Decimal(0, false, kMaxCycleMs, "milliseconds"));
  auto* cache_capacity =
      app.add_option("--cache-capacity", config.cache_capacity,
                     "Response cache entries, 0 disables "
                     "(HOROVOD_CACHE_CAPACITY)")
          ->check(WholeNumber(0, kMaxCount));
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
      ->check(WholeNumber(0, kMaxCount))
      ->needs(autotune)
      ->group(autotune_group);
  app.add_option("--autotune-steps-per-sample",
                 config.autotune_steps_per_sample,
                 "Working cycles measured per sample "
                 "(HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE, default 10)")
      ->check(WholeNumber(1, kMaxCount))
      ->needs(autotune)
      ->group(autotune_group);
  app.add_option("--autotune-bayes-opt-max-samples",
                 config.autotune_max_samples,
                 "Most parameter sets scored before the best is fixed "
                 "(HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES, default 20)")
      ->check(WholeNumber(1, kMaxCount))
      ->needs(autotune)
      ->group(autotune_group);

  auto* stall_group = "Stall check";
  const auto max_seconds = static_cast<int64_t>(kMaxTimeoutSeconds);
  auto* stall_warning =
      app.add_option("--stall-check-warning-time-seconds",
                     config.stall_check_warning_seconds,
                     "Seconds some ranks may wait for the others on a tensor "
                     "before rank 0 warns (HOROVOD_STALL_CHECK_TIME_SECONDS, "
                     "default 60)")
          ->check(WholeNumber(1, max_seconds))
          ->group(stall_group);
  auto* stall_shutdown =
      app.add_option("--stall-check-shutdown-time-seconds",
                     config.stall_check_shutdown_seconds,
                     "Seconds of such a stall before every rank's "
                     "collectives fail; 0: never "
                     "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, default 0)")
          ->check(WholeNumber(0, max_seconds))
          ->group(stall_group);
  app.add_flag("--no-stall-check", config.stall_check_disable,
               "Turn the stall check off (HOROVOD_STALL_CHECK_DISABLE)")
      ->excludes(stall_warning)
      ->excludes(stall_shutdown)
      ->group(stall_group);

  auto* elastic = "Elastic mode (on with --host-discovery-script or --min-np)";
  app.add_option("--min-np,--min-num-proc", config.min_np,
                 "Fewest workers the job runs with; below it the job waits "
                 "up to --elastic-timeout, then fails (default: -np)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--max-np,--max-num-proc", config.max_np,
                 "Most workers the job runs with (default: every slot)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--slots-per-host", config.slots_per_host,
                 "Slots of a discovered host listed without ':N' (default 1)")
      ->check(WholeNumber(1, kMaxProcesses))
      ->group(elastic);
  app.add_option("--host-discovery-script", config.discovery_script,
                 "Executable printing the available hosts, one 'host' or "
                 "'host:slots' per line; run every --discovery-interval")
      ->check(CLI::ExistingFile)
      ->group(elastic);
  double elastic_timeout = 600;
  std::optional<double> discovery_interval;
  app.add_option("--elastic-timeout", elastic_timeout,
                 "Seconds to wait for enough slots (--min-np; -np at the "
                 "start) before the job fails (default 600). It never ends "
                 "a worker that is busy training: a new worker's first "
                 "check-in is bounded by --start-timeout, a running one's "
                 "by its liveness")
      ->check(Decimal(0, false, kMaxTimeoutSeconds, "seconds"))
      ->group(elastic);
  app.add_option("--reset-limit", config.reset_limit,
                 "Most resets (generations after the first) before the job "
                 "fails (default: no limit)")
      ->check(WholeNumber(0, kMaxResets))
      ->group(elastic);
  std::vector<int> cooldown;
  app.add_option("--blacklist-cooldown-range", cooldown,
                 "MIN MAX seconds: a host blacklisted for the n-th time is "
                 "usable again after min(MAX, MIN * 2^(n-1)) s if discovery "
                 "still lists it (default: blacklisted for good)")
      ->expected(2)
      ->allow_extra_args(false)
      ->check(WholeNumber(1, max_seconds))
      ->group(elastic);
  app.add_option("--discovery-interval", discovery_interval,
                 "Seconds between discovery runs (default 1, or "
                 "HVD_DISCOVERY_INTERVAL)")
      ->check(
          Decimal(kMinDiscoverySeconds, true, kMaxDiscoverySeconds, "seconds"))
      ->group(elastic);

  SplitArgs split = SplitAtCommand(
      app, std::vector<std::string>(args.begin() + 1, args.end()));
  std::vector<std::string> reversed(split.options.rbegin(),
                                    split.options.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e) == 0 ? 0 : 2};
  }
  if (show_version || check_build) {
    const common::BuildInfo info = common::GetBuildInfo();
    std::cout << (show_version ? info.version + "\n"
                               : common::CheckBuildReport(info));
    return {std::nullopt, 0};
  }
  auto fail = [](const Status& status) -> CliOutcome {
    std::cerr << "hvdrun: " << status.message() << "\n"
              << "Run with --help for more information.\n";
    return {std::nullopt, 2};
  };
  config.command = std::move(split.command);
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
  config.elastic_timeout = CeilSeconds(elastic_timeout);
  config.start_timeout = CeilSeconds(start_timeout);
  if (!cooldown.empty()) {
    if (cooldown[0] > cooldown[1]) {
      return fail(Status::InvalidArgument(
          "--blacklist-cooldown-range MIN MAX needs MIN <= MAX, got " +
          std::to_string(cooldown[0]) + " " + std::to_string(cooldown[1])));
    }
    config.cooldown_range = std::make_pair(cooldown[0], cooldown[1]);
  }
  auto discovery_timeout = DiscoverySecondsFromEnv(
      common::env_vars::kHvdDiscoveryTimeout, config.discovery_timeout);
  if (!discovery_timeout.ok()) return fail(discovery_timeout.status());
  config.discovery_timeout = *discovery_timeout;
  if (discovery_interval) {
    config.discovery_interval = Milliseconds(*discovery_interval);
  } else {
    auto from_env = DiscoverySecondsFromEnv(
        common::env_vars::kHvdDiscoveryInterval, config.discovery_interval);
    if (!from_env.ok()) return fail(from_env.status());
    config.discovery_interval = *from_env;
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
    return fail(
        Status::InvalidArgument("-np " + std::to_string(config.num_proc) +
                                " needs more slots than the " +
                                std::to_string(slots) + " the hosts offer"));
  }
  return {std::move(config), 0};
}

}  // namespace hvd::launcher
