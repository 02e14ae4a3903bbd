// What a wait status from waitpid says, for messages and exit codes. Pure;
// the policy, the guards and the Slurm queries share it.
#pragma once

#include <string>

namespace hvd::launcher {

// "exited with code C" or "was killed by signal S (name)".
std::string DescribeExit(int wait_status);

// The shell's exit code for a wait status: the code, or 128 + the signal.
int ShellExitCode(int wait_status);

}  // namespace hvd::launcher
