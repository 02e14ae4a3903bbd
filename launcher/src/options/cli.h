// hvdrun's command line (CLI11): horovodrun's flags and grammar. Options
// come first in any order; the first word that is neither an option nor an
// option's value (or the word after "--") starts the command, which keeps
// its own flags. Every number is checked before use: finite, within the
// flag's range, or a usage error naming the flag, the value as typed and the
// range.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

struct CliOutcome {
  // Set when the launcher should run; otherwise exit with `exit_code`
  // (0 after --help, 2 after a usage error, already printed).
  std::optional<LaunchConfig> config;
  int exit_code = 0;
};

// Parses argv (argv[0] is the program). Prints help or the error itself
// (to stdout and stderr).
CliOutcome ParseCommandLine(const std::vector<std::string>& args);

}  // namespace hvd::launcher
