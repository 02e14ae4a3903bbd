#include "options/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "options/option_suggestion.h"
#include "options/refused_options.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

enum class Kind {
  kValue,  // a scalar, given to `option` as its value
  kBool,   // true: `option`; false: `when_false`
};

struct KeySpec {
  const char* section;  // "" for a top-level key
  const char* key;
  Kind kind;
  const char* option;
  const char* when_false;
};

// horovodrun's schema (horovod/runner/common/util/config_parser.py).
constexpr KeySpec kKeys[] = {
    {"params", "fusion_threshold_mb", Kind::kValue, "--fusion-threshold-mb",
     nullptr},
    {"params", "cycle_time_ms", Kind::kValue, "--cycle-time-ms", nullptr},
    {"params", "cache_capacity", Kind::kValue, "--cache-capacity", nullptr},
    {"params", "hierarchical_allreduce", Kind::kBool,
     "--hierarchical-allreduce", "--no-hierarchical-allreduce"},
    {"params", "hierarchical_allgather", Kind::kBool,
     "--hierarchical-allgather", "--no-hierarchical-allgather"},
    {"autotune", "enabled", Kind::kBool, "--autotune", "--no-autotune"},
    {"autotune", "log_file", Kind::kValue, "--autotune-log-file", nullptr},
    {"autotune", "warmup_samples", Kind::kValue, "--autotune-warmup-samples",
     nullptr},
    {"autotune", "steps_per_sample", Kind::kValue,
     "--autotune-steps-per-sample", nullptr},
    {"autotune", "bayes_opt_max_samples", Kind::kValue,
     "--autotune-bayes-opt-max-samples", nullptr},
    {"autotune", "gaussian_process_noise", Kind::kValue,
     "--autotune-gaussian-process-noise", nullptr},
    {"timeline", "filename", Kind::kValue, "--timeline-filename", nullptr},
    {"timeline", "mark_cycles", Kind::kBool, "--timeline-mark-cycles",
     "--no-timeline-mark-cycles"},
    {"stall_check", "enabled", Kind::kBool, "--stall-check",
     "--no-stall-check"},
    {"stall_check", "warning_time_seconds", Kind::kValue,
     "--stall-check-warning-time-seconds", nullptr},
    {"stall_check", "shutdown_time_seconds", Kind::kValue,
     "--stall-check-shutdown-time-seconds", nullptr},
    {"library_options", "mpi_threads_disable", Kind::kBool,
     "--mpi-threads-disable", "--no-mpi-threads-disable"},
    {"library_options", "num_nccl_streams", Kind::kValue, "--num-nccl-streams",
     nullptr},
    {"library_options", "thread_affinity", Kind::kValue, "--thread-affinity",
     nullptr},
    {"library_options", "gloo_timeout_seconds", Kind::kValue,
     "--gloo-timeout-seconds", nullptr},
    {"logging", "level", Kind::kValue, "--log-level", nullptr},
    {"logging", "with_timestamp", Kind::kBool, "--log-with-timestamp",
     "--log-without-timestamp"},
};

constexpr char kController[] = "controller";

std::vector<std::string> SectionNames() {
  std::vector<std::string> names = {kController};
  for (const auto& spec : kKeys) {
    if (std::find(names.begin(), names.end(), spec.section) == names.end()) {
      names.emplace_back(spec.section);
    }
  }
  return names;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return text;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Status Error(const std::string& key, const std::string& what) const {
    return Status::InvalidArgument("--config-file " + path_ + ": " + key +
                                   ": " + what);
  }

  // The words for `option`, or the refusal when hvdrun refuses it.
  Result<std::vector<std::string>> Words(const std::string& key,
                                         const std::string& option,
                                         const std::string& value) const {
    if (const RefusedOption* refused = FindRefusedOption(option)) {
      return Error(key, "refused (like " + option + "): " + refused->reason);
    }
    if (value.empty()) return std::vector<std::string>{option};
    return std::vector<std::string>{option + "=" + value};
  }

  Result<FileSetting> Setting(const KeySpec& spec,
                              const YAML::Node& value) const {
    const std::string key = std::string(spec.section) + "." + spec.key;
    if (!value.IsScalar()) {
      return Error(key, spec.kind == Kind::kBool
                            ? "expected true or false"
                            : "expected a single value, not a list or map");
    }
    if (spec.kind == Kind::kValue) {
      auto words = Words(key, spec.option, value.Scalar());
      if (!words.ok()) return words.status();
      if (value.Scalar().empty()) {
        return Error(key, "expected a value, got an empty string");
      }
      return FileSetting{key, *words};
    }
    bool on = false;
    if (!YAML::convert<bool>::decode(value, on)) {
      return Error(key, "expected true or false, got '" + value.Scalar() + "'");
    }
    auto words = Words(key, on ? spec.option : spec.when_false, "");
    if (!words.ok()) return words.status();
    return FileSetting{key, *words};
  }

  Result<std::vector<FileSetting>> Section(const std::string& section,
                                           const YAML::Node& node) const {
    std::vector<FileSetting> settings;
    if (node.IsNull()) return settings;
    if (!node.IsMap()) return Error(section, "expected a map of settings");
    std::vector<std::string> known;
    for (const auto& spec : kKeys) {
      if (section == spec.section) known.emplace_back(spec.key);
    }
    for (const auto& entry : node) {
      const std::string name = entry.first.Scalar();
      const KeySpec* spec = nullptr;
      for (const auto& candidate : kKeys) {
        if (section == candidate.section && name == candidate.key) {
          spec = &candidate;
        }
      }
      if (!spec) {
        std::string near = ClosestName(name, known);
        return Error(section + "." + name,
                     "unknown key" +
                         (near.empty() ? "" : "; did you mean " + near + "?") +
                         " (keys of " + section + ": " + Join(known) + ")");
      }
      if (entry.second.IsNull()) continue;  // as horovodrun: no value, unset
      auto setting = Setting(*spec, entry.second);
      if (!setting.ok()) return setting.status();
      settings.push_back(*setting);
    }
    // horovodrun's defaults for a section that is present: autotune off
    // unless enabled, the stall check on unless disabled.
    auto has = [&](const char* key) { return bool(node[key]); };
    if (section == "autotune" && !has("enabled")) {
      settings.insert(settings.begin(),
                      {"autotune.enabled", {"--no-autotune"}});
    }
    if (section == "stall_check" && !has("enabled")) {
      settings.insert(settings.begin(),
                      {"stall_check.enabled", {"--stall-check"}});
    }
    return settings;
  }

  Result<std::vector<FileSetting>> Controller(const YAML::Node& node) const {
    if (!node.IsScalar()) return Error(kController, "expected gloo");
    std::string name = Lower(node.Scalar());
    if (name == "gloo")
      return std::vector<FileSetting>{{kController, {"--gloo"}}};
    if (name == "mpi") {
      auto words = Words(kController, "--mpi", "");
      return words.status();
    }
    return Error(kController, "expected gloo, got '" + node.Scalar() + "'");
  }

  Result<std::vector<FileSetting>> Document(const YAML::Node& root) const {
    std::vector<FileSetting> settings;
    if (root.IsNull()) return settings;
    if (!root.IsMap()) {
      return Status::InvalidArgument(
          "--config-file " + path_ +
          ": expected a map of sections (params, autotune, timeline, "
          "stall_check, library_options, logging, controller)");
    }
    const std::vector<std::string> sections = SectionNames();
    for (const auto& entry : root) {
      const std::string name = entry.first.Scalar();
      Result<std::vector<FileSetting>> part = std::vector<FileSetting>{};
      if (name == kController) {
        part = Controller(entry.second);
      } else if (std::find(sections.begin(), sections.end(), name) !=
                 sections.end()) {
        part = Section(name, entry.second);
      } else {
        std::string near = ClosestName(name, sections);
        return Error(name,
                     "unknown section" +
                         (near.empty() ? "" : "; did you mean " + near + "?") +
                         " (sections: " + Join(sections) + ")");
      }
      if (!part.ok()) return part.status();
      settings.insert(settings.end(), part->begin(), part->end());
    }
    return settings;
  }

 private:
  static std::string Join(const std::vector<std::string>& names) {
    std::string joined;
    for (const auto& name : names) {
      joined += (joined.empty() ? "" : ", ") + name;
    }
    return joined;
  }

  std::string path_;
};

}  // namespace

Result<std::vector<FileSetting>> ParseConfigText(const std::string& text,
                                                 const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("--config-file " + path +
                                   ": not valid YAML: " + e.what());
  }
  try {
    return Reader(path).Document(root);
  } catch (const YAML::Exception& e) {  // e.g. a key that is not a scalar
    return Status::InvalidArgument("--config-file " + path + ": " + e.what());
  }
}

Result<std::vector<FileSetting>> ReadConfigFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return Status::InvalidArgument("--config-file: cannot read '" + path + "'");
  }
  std::stringstream text;
  text << file.rdbuf();
  return ParseConfigText(text.str(), path);
}

}  // namespace hvd::launcher
