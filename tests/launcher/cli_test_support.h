// What cli_test.cc and cli_values_test.cc share: ParseCommandLine run as
// hvdrun would run it, and what it printed or gave the workers.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "job/worker_env.h"
#include "options/cli.h"

namespace hvd::launcher::cli_test {

inline CliOutcome Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hvdrun");
  return ParseCommandLine(args);
}

// The worker environment that `args` (before the command) produce, or an
// empty map when parsing fails.
inline std::map<std::string, std::string> EnvOf(std::vector<std::string> args) {
  args.insert(args.begin(), {"-np", "1"});
  args.push_back("cmd");
  CliOutcome out = Parse(args);
  EXPECT_TRUE(out.config) << args[2];
  if (!out.config) return {};
  SlotAssignment slot{"localhost", {0, 1, 0, 1, 0, 1}, {}};
  EnvList env =
      WorkerEnvironment(slot, 1, {"127.0.0.1", 1, "s", ""}, *out.config);
  return {env.begin(), env.end()};
}

// The output of a parse that ends at once with exit code 0.
inline std::string OutputOf(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  CliOutcome out = Parse(args);
  std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(out.config);
  EXPECT_EQ(out.exit_code, 0);
  return text;
}

// What ParseCommandLine printed for `args` (which must fail with 2).
inline std::string ErrorOf(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStderr();
  CliOutcome out = Parse(args);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(out.config) << args[0] << " " << args[1];
  EXPECT_EQ(out.exit_code, 2) << args[0] << " " << args[1];
  return err;
}

}  // namespace hvd::launcher::cli_test
