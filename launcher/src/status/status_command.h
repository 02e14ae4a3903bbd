// `hvdrun status [--json] [URL]`: a running job's status in the terminal.
// Without a URL it shows every job hvdrun runs on this machine for this
// user (job_file.h); with one, the job at that URL (the one hvdrun
// printed, token included). --json prints status.json as it came.
//
// A standby hvdrun's server answers with a redirect to its leader's page
// (standby_status.h): `hvdrun status` follows one, to http(s) only, and
// prints what the leader says after what the standby said (in JSON, the
// standby's account as the member `standby` of the leader's status.json).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::launcher {

inline constexpr char kStatusCommand[] = "status";

// `args` are the words after "status". Returns the exit code: 0 shown, 1
// no job or not reachable, 2 a usage error.
int StatusMain(const std::vector<std::string>& args);

// A URL split into what the HTTP client connects to ("http://host:port")
// and the request target ("/path?query", "/" when it has no path);
// kInvalidArgument for a URL that is not http(s)://HOST... with a host.
struct SplitUrl {
  std::string origin;
  std::string target;
};
common::Result<SplitUrl> SplitStatusUrl(std::string_view url);

// Whether an answer with HTTP status `code` is a redirect to follow.
bool IsRedirect(int code);

// Where a redirect to `location` from `from` (the origin asked) leads:
// only an absolute http(s) URL, and only when none was followed yet
// (`followed`); otherwise why not.
common::Result<SplitUrl> RedirectTarget(std::string_view location,
                                        std::string_view from, bool followed);

}  // namespace hvd::launcher
