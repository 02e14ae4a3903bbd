// `hvdrun status [--json] [--token-file FILE] [URL]`: a running job's
// status in the terminal. Without a URL it shows every job hvdrun runs on
// this machine for this user (job_file.h); with one, the job at that URL.
// The read token for a URL comes from --token-file, else HVD_STATUS_TOKEN,
// else the URL's own ?token= (which `ps` shows other users: hvdrun warns).
// --json prints status.json as it came.
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

// The read token `hvdrun status URL` sends as `Authorization: Bearer`, and
// the warning it prints first. The token is --token-file's content
// (`token_file`, read by the rules of --status-token-file; never made),
// else `env_token` (HVD_STATUS_TOKEN; null or empty: unset), else empty:
// the URL's own ?token= goes as it is. A URL given with its ?token= is
// warned about either way: the command line is readable by every user of
// the machine.
struct ReadToken {
  std::string token;    // empty: none besides the URL's
  std::string warning;  // empty: none
};
common::Result<ReadToken> ChooseReadToken(std::string_view url,
                                          const std::string& token_file,
                                          const char* env_token);

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
