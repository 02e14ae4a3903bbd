// hvdrun's options: their names (horovodrun's), help texts, ranges and
// defaults, as one CLI11 table, filled into OptionValues. cli.cc splits
// argv, parses it against this table and resolves the values into a
// LaunchConfig; a config file's settings are checked against it too.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "job/launch_config.h"

namespace hvd::launcher {

// What CLI11 fills from the options; cli.cc turns it into a LaunchConfig.
struct OptionValues {
  LaunchConfig config;
  std::string hosts_text, hostfile, log_level, config_file, launcher;
  std::string rendezvous_backend;
  double start_timeout = kDefaultStartTimeout.count();
  double elastic_timeout = kDefaultElasticTimeout.count();
  std::optional<double> discovery_interval;
  int adopt_grace_seconds = 0;
  std::optional<int> leader_lease_seconds;
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

// hvdrun's description, help layout and usage-error format.
void DescribeApp(CLI::App& app);

// Every option of hvdrun, writing into `v`.
void DefineOptions(CLI::App& app, OptionValues& v);

}  // namespace hvd::launcher
