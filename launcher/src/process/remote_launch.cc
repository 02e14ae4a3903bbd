#include "process/remote_launch.h"

#include <map>

#include "hvd/common/env_vars.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

constexpr char kTag[] = "hvd-remote-launch 1";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string EncodeRemoteLaunch(const RemoteLaunch& launch) {
  std::string payload;
  auto field = [&payload](std::string_view text) {
    payload.append(text);
    payload.push_back('\0');
  };
  field(kTag);
  field(launch.working_dir);
  field(std::to_string(launch.env.size()));
  for (const auto& [name, value] : launch.env) field(name + "=" + value);
  for (const std::string& word : launch.argv) field(word);
  return std::to_string(payload.size()) + "\n" + payload;
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
  if (fields.size() < 3 || fields[0] != kTag) {
    return Status::InvalidArgument(
        "launch message: not hvdrun's format (hvdrun differs between "
        "hosts? install the same hvd on every host)");
  }
  size_t count = 0;
  for (char c : fields[2]) {
    if (c < '0' || c > '9' || count > fields.size()) {
      return Status::InvalidArgument("launch message: bad variable count");
    }
    count = count * 10 + static_cast<size_t>(c - '0');
  }
  if (fields[2].empty() || fields.size() <= 3 + count) {
    return Status::InvalidArgument(
        "launch message: no command after the variables");
  }
  RemoteLaunch launch;
  launch.working_dir = fields[1];
  for (size_t i = 3; i < 3 + count; ++i) {
    size_t eq = fields[i].find('=');
    if (eq == 0 || eq == std::string_view::npos) {
      return Status::InvalidArgument("launch message: a variable has no name");
    }
    launch.env.emplace_back(fields[i].substr(0, eq), fields[i].substr(eq + 1));
  }
  for (size_t i = 3 + count; i < fields.size(); ++i) {
    launch.argv.emplace_back(fields[i]);
  }
  return launch;
}

bool IsForwardedVariable(std::string_view name) {
  for (std::string_view exact :
       {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "XDG_RUNTIME_DIR",
        common::env_vars::kHvdSecretKey}) {
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
