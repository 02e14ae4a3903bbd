// hvdrun's argv, split as horovodrun's argparse splits it (REMAINDER):
// options first, in any order, each with its values; the first word that
// is neither an option nor an option's value (or the word after "--")
// starts the command, which keeps its own flags. CLI11 has no such
// positional, so the split is made here from CLI11's own table of how many
// values each option takes; CLI11 then parses the options alone, so an
// unknown option is an error rather than the command. horovodrun's
// single-dash words of several letters ("-np"), which CLI11 would read as
// a cluster of one-letter options, become their long names; an
// abbreviation of one long name becomes that name.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace hvd::launcher {

struct SplitArgs {
  std::vector<std::string> options;
  std::vector<std::string> command;
  std::string error;  // an unknown or refused option: a usage error
};

SplitArgs SplitAtCommand(const CLI::App& app,
                         const std::vector<std::string>& args);

}  // namespace hvd::launcher
