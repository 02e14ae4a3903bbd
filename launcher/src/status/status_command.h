// `hvdrun status [--json] [URL]`: a running job's status in the terminal.
// Without a URL it shows every job hvdrun runs on this machine for this
// user (job_file.h); with one, the job at that URL (the one hvdrun
// printed, token included). --json prints status.json as it came.
#pragma once

#include <string>
#include <vector>

namespace hvd::launcher {

inline constexpr char kStatusCommand[] = "status";

// `args` are the words after "status". Returns the exit code: 0 shown, 1
// no job or not reachable, 2 a usage error.
int StatusMain(const std::vector<std::string>& args);

}  // namespace hvd::launcher
