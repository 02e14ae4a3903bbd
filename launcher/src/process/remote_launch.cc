#include "process/remote_launch.h"

#include <map>
#include <optional>

#include "hvd/common/env_vars.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

constexpr char kTag[] = "hvd-remote-launch 2";
// Starts a sealed frame's length line; a plain one starts with a digit.
constexpr char kMungeMarker[] = "munge ";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string EncodeRemoteLaunchPayload(const RemoteLaunch& launch) {
  std::string payload;
  auto field = [&payload](std::string_view text) {
    payload.append(text);
    payload.push_back('\0');
  };
  field(kTag);
  field(launch.working_dir);
  field(launch.adopt_name);
  field(std::to_string(launch.adopt_grace_ms));
  field(std::to_string(launch.env.size()));
  for (const auto& [name, value] : launch.env) field(name + "=" + value);
  for (const std::string& word : launch.argv) field(word);
  return payload;
}

std::string EncodeRemoteLaunch(const RemoteLaunch& launch) {
  return FrameLaunch(LaunchSeal::kPlain, EncodeRemoteLaunchPayload(launch));
}

const char* LaunchSealName(LaunchSeal seal) {
  return seal == LaunchSeal::kMunge ? "MUNGE-sealed" : "plain";
}

std::string FrameLaunch(LaunchSeal seal, std::string_view body) {
  std::string frame = seal == LaunchSeal::kMunge ? kMungeMarker : "";
  frame += std::to_string(body.size());
  frame += '\n';
  frame.append(body);
  return frame;
}

Result<std::optional<LaunchFrame>> ParseLaunchFrame(std::string_view input) {
  // The longest valid length line: the marker and 20 digits.
  constexpr size_t kLongestLine = sizeof(kMungeMarker) - 1 + 20;
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) {
    if (input.size() > kLongestLine) {
      return Status::InvalidArgument(
          "the launch message has no length line (is the other end "
          "hvdrun?)");
    }
    return std::optional<LaunchFrame>();
  }
  std::string_view line = input.substr(0, newline);
  LaunchFrame frame;
  if (StartsWith(line, kMungeMarker)) {
    frame.seal = LaunchSeal::kMunge;
    line.remove_prefix(sizeof(kMungeMarker) - 1);
  }
  // Decimal digits only (no sign, no space), bounded before it can wrap.
  size_t size = 0;
  bool valid = !line.empty();
  for (char c : line) {
    if (c < '0' || c > '9' || size > kMaxRemoteLaunchBytes) {
      valid = false;
      break;
    }
    size = size * 10 + static_cast<size_t>(c - '0');
  }
  if (!valid || size > kMaxRemoteLaunchBytes) {
    return Status::InvalidArgument(
        "the launch message's length line is malformed");
  }
  frame.body_at = newline + 1;
  frame.body_size = size;
  if (input.size() - frame.body_at < size) return std::optional<LaunchFrame>();
  return std::optional<LaunchFrame>(frame);
}

Result<RemoteLaunch> DecodeRemoteLaunch(std::string_view payload) {
  std::vector<std::string_view> fields;
  while (!payload.empty()) {
    size_t end = payload.find('\0');
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("launch message: a field has no end");
    }
    fields.push_back(payload.substr(0, end));
    payload.remove_prefix(end + 1);
  }
  if (fields.size() < 5 || fields[0] != kTag) {
    return Status::InvalidArgument(
        "launch message: not hvdrun's format (hvdrun differs between "
        "hosts? install the same hvd on every host)");
  }
  // A decimal number up to `bound`, or nullopt.
  auto number = [](std::string_view text,
                   size_t bound) -> std::optional<size_t> {
    size_t value = 0;
    for (char c : text) {
      if (c < '0' || c > '9' || value > bound) return std::nullopt;
      value = value * 10 + static_cast<size_t>(c - '0');
    }
    if (text.empty() || value > bound) return std::nullopt;
    return value;
  };
  RemoteLaunch launch;
  launch.working_dir = fields[1];
  launch.adopt_name = fields[2];
  auto grace = number(fields[3], 24 * 3600 * 1000);
  if (!grace) return Status::InvalidArgument("launch message: bad grace");
  launch.adopt_grace_ms = static_cast<int64_t>(*grace);
  auto variables = number(fields[4], fields.size());
  if (!variables) {
    return Status::InvalidArgument("launch message: bad variable count");
  }
  const size_t count = *variables;
  if (fields.size() <= 5 + count) {
    return Status::InvalidArgument(
        "launch message: no command after the variables");
  }
  for (size_t i = 5; i < 5 + count; ++i) {
    size_t eq = fields[i].find('=');
    if (eq == 0 || eq == std::string_view::npos) {
      return Status::InvalidArgument("launch message: a variable has no name");
    }
    launch.env.emplace_back(fields[i].substr(0, eq), fields[i].substr(eq + 1));
  }
  for (size_t i = 5 + count; i < fields.size(); ++i) {
    launch.argv.emplace_back(fields[i]);
  }
  return launch;
}

bool IsForwardedVariable(std::string_view name) {
  for (std::string_view exact :
       {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "XDG_RUNTIME_DIR",
        common::env_vars::kHvdSecretKey, common::env_vars::kHvdWorkerKey,
        common::env_vars::kHvdGenerationsKey}) {
    if (name == exact) return false;
  }
  for (std::string_view prefix :
       {"SSH_", "XDG_SESSION_", "BASH_FUNC_", "SLURM_", "SLURMD_"}) {
    if (StartsWith(name, prefix)) return false;
  }
  return !EndsWith(name, "CUDA_VISIBLE_DEVICES");
}

EnvList ForwardedEnvironment(const std::vector<std::string>& environ,
                             const EnvList& overrides) {
  std::map<std::string, size_t> index;
  EnvList env;
  auto set = [&](const std::string& name, const std::string& value) {
    auto [it, fresh] = index.emplace(name, env.size());
    if (fresh) {
      env.emplace_back(name, value);
    } else {
      env[it->second].second = value;
    }
  };
  for (const std::string& entry : environ) {
    size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (IsForwardedVariable(name)) set(name, entry.substr(eq + 1));
  }
  for (const auto& [name, value] : overrides) set(name, value);
  return env;
}

}  // namespace hvd::launcher
