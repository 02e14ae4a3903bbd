#include "cli.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "config_file.h"
#include "hvd/common/build_info.h"
#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/logging.h"
#include "hvd/common/tuning_defaults.h"
#include "option_suggestion.h"
#include "refused_options.h"
#include "slurm_allocation.h"
#include "slurm_jobs.h"
#include "spawner.h"

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
    return Quoted(text) + " is not a number" +
           (unit.empty() ? "" : " of " + unit) +
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
  std::string error;  // an unknown or refused option: a usage error
};

constexpr std::pair<const char*, const char*> kSingleDashWords[] = {
    {"-np", "--num-proc"},
    {"-cb", "--check-build"},
    {"-hostfile", "--hostfile"},
    {"-prefix-timestamp", "--prefix-output-with-timestamp"}};

// "-x", "--x"; not "-", "-1" or "-.5" (a value).
bool LooksLikeOption(const std::string& word) {
  return word.size() >= 2 && word[0] == '-' &&
         !std::isdigit(static_cast<unsigned char>(word[1])) && word[1] != '.';
}

// Every spelling of every option, for suggestions and abbreviations.
std::vector<std::string> KnownNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
  }
  for (const auto& [dash, long_name] : kSingleDashWords) names.push_back(dash);
  for (auto* refused = RefusedOptionsBegin(); refused != RefusedOptionsEnd();
       ++refused) {
    names.emplace_back(refused->name);
  }
  return names;
}

// The option `name` stands for: itself, or the one long option it is an
// unambiguous prefix of (argparse's abbreviations: --verb is --verbose).
// Empty when it is none.
std::string ResolveOptionName(const CLI::App& app, const std::string& name) {
  if (app.get_option_no_throw(name) || FindRefusedOption(name)) return name;
  // "-p22": a short option with its value attached.
  if (name.size() > 2 && name[1] != '-' &&
      app.get_option_no_throw(name.substr(0, 2))) {
    return name;
  }
  if (name.rfind("--", 0) != 0 || name.size() < 4) return "";
  std::string match;
  const CLI::Option* owner = nullptr;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& long_name : option->get_lnames()) {
      if (("--" + long_name).rfind(name, 0) != 0) continue;
      if (owner && owner != option) return "";  // ambiguous
      if (!owner) match = "--" + long_name;
      owner = option;
    }
  }
  return match;
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
    const size_t equals = word.find('=');
    const std::string typed = word.substr(0, equals);
    const std::string name = ResolveOptionName(app, typed);
    if (name.empty()) {
      const std::vector<std::string> known = KnownNames(app);
      const std::vector<std::string> longer = NamesStartingWith(typed, known);
      if (typed.rfind("--", 0) == 0 && longer.size() > 1) {
        split.error = "ambiguous option " + typed + ": it begins " +
                      std::to_string(longer.size()) + " options (";
        for (size_t n = 0; n < longer.size(); ++n) {
          split.error += (n ? ", " : "") + longer[n];
        }
        split.error += "); type more of the name";
        return split;
      }
      std::string near = ClosestName(typed, known);
      split.error = "unknown option " + typed +
                    (near.empty() ? "" : "; did you mean " + near + "?");
      return split;
    }
    if (const RefusedOption* refused = FindRefusedOption(name)) {
      split.error = name + " is not supported: " + refused->reason;
      return split;
    }
    if (name != typed) word = name + word.substr(typed.size());
    split.options.push_back(word);
    if (equals != std::string::npos) continue;  // --flag=value
    // An option with its value attached ("-p22") takes no separate value.
    // As in argparse and CLI11, an option's values end early at the next
    // option; CLI11 then reports the missing value.
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

namespace {

constexpr int64_t kMaxCore = 65535;

// "" when `text` is CPU core numbers separated by commas ("3" or "0,4").
std::string CheckCoreList(const std::string& text) {
  std::stringstream items(text);
  std::string item;
  bool good = !text.empty() && text.back() != ',';
  while (good && std::getline(items, item, ',')) {
    good = CheckWholeNumber(item, 0, kMaxCore).empty();
  }
  if (!good) {
    return Quoted(text) + " is not a list of CPU core numbers (0 to " +
           std::to_string(kMaxCore) +
           "), one per local rank, separated by commas";
  }
  return "";
}

CLI::Validator CoreList() {
  return CLI::Validator([](std::string& text) { return CheckCoreList(text); },
                        "CORE[,CORE...]");
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

// What CLI11 fills from the options; cli.cc turns it into a LaunchConfig.
struct OptionValues {
  LaunchConfig config;
  std::string hosts_text, hostfile, log_level, config_file, launcher;
  double start_timeout = 30;
  double elastic_timeout = 600;
  std::optional<double> discovery_interval;
  std::vector<int> cooldown;
  std::vector<std::string> exports;  // -x
  bool show_version = false, check_build = false, gloo = false;
  bool disable_cache = false;
  bool log_with_timestamp = true;
  const CLI::Option* log_timestamp = nullptr;
  // --[no-]hierarchical-allreduce / -allgather: unset unless given.
  bool hierarchical_allreduce = true, hierarchical_allgather = true;
  const CLI::Option* hierarchical_allreduce_flag = nullptr;
  const CLI::Option* hierarchical_allgather_flag = nullptr;
};

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
  app.add_option("--start-timeout", v.start_timeout,
                 "Seconds workers may take to start and meet at the "
                 "rendezvous, and ssh to connect (HOROVOD_START_TIMEOUT, "
                 "default 30)")
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
                 "start) before the job fails (default 600). It never ends "
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
  config.elastic = !config.discovery_script.empty() || config.min_np > 0;
  config.elastic_timeout = CeilSeconds(v.elastic_timeout);
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
