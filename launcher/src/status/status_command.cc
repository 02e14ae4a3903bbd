#include "status/status_command.h"

#include <httplib.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hvd/common/http_message.h"
#include "hvd/common/status.h"
#include "status/job_file.h"
#include "status/status_server.h"

namespace hvd::launcher {

namespace {

constexpr char kUsage[] =
    "usage: hvdrun status [--json] [URL]\n"
    "  Shows a running job: without URL, every job of this user on this\n"
    "  machine; with URL (as hvdrun printed it, ?token=... included), that\n"
    "  job. --json prints the status as JSON: with URL, that job's\n"
    "  status.json; without, one array of {\"pid\", \"url\", \"status\"},\n"
    "  one element per job (status null for a job that ended meanwhile).\n"
    "  A standby hvdrun (--standby) sends the reader on to the hvdrun that\n"
    "  leads its job: shown is the leader's status, after what the standby\n"
    "  said (in JSON, as the member \"standby\").\n";

// One GET, within the client's timeouts (3 s to connect, 5 s to read).
struct Got {
  int code = 0;
  std::string body;
  std::string location;
};
common::Result<Got> Get(const SplitUrl& url) {
  httplib::Client client(url.origin);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(std::chrono::seconds(5));
  client.set_follow_location(false);  // one redirect, followed here
  auto answer = client.Get(url.target);
  if (!answer) {
    return common::Status::Transport("cannot reach " + url.origin + ": " +
                                     httplib::to_string(answer.error()));
  }
  return Got{answer->status, answer->body,
             answer->get_header_value("Location")};
}

common::Result<nlohmann::json> StatusJsonOf(const SplitUrl& url,
                                            const Got& got) {
  if (got.code != 200) {
    return common::Status::Transport(url.origin + " answered " +
                                     std::to_string(got.code) + ": " +
                                     got.body.substr(0, 300));
  }
  auto body = nlohmann::json::parse(got.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return common::Status::InvalidArgument(url.origin +
                                           " did not answer status JSON");
  }
  return body;
}

// Fetches URL's status.json: "http://host:port/...?token=T". A standby
// redirects to its leader: followed once, and what the standby said goes
// along as the member `standby`. Bounded: two requests at most.
common::Result<nlohmann::json> Fetch(const std::string& url) {
  auto split = SplitStatusUrl(url);
  if (!split.ok()) return split.status();
  const size_t mark = split->target.find('?');
  SplitUrl first{split->origin,
                 "/status.json" + (mark == std::string::npos
                                       ? std::string()
                                       : split->target.substr(mark))};
  auto got = Get(first);
  if (!got.ok()) return got.status();
  if (!IsRedirect(got->code)) return StatusJsonOf(first, *got);
  auto said = nlohmann::json::parse(got->body, nullptr, false);
  const nlohmann::json standby = StatusField(said, "standby");
  auto next = RedirectTarget(got->location, first.origin, false);
  if (!next.ok()) return next.status();
  auto then = Get(*next);
  if (!then.ok()) {
    return then.status().WithContext("following " + first.origin +
                                     "'s redirect (a standby's, to its "
                                     "leader)");
  }
  if (IsRedirect(then->code)) {
    auto again = RedirectTarget(then->location, next->origin, true);
    return again.status();
  }
  auto status = StatusJsonOf(*next, *then);
  if (status.ok() && standby.is_object()) (*status)["standby"] = standby;
  return status;
}

void PrintJson(const nlohmann::json& json) {
  const std::string text =
      json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
}

int Print(const common::Result<nlohmann::json>& status, bool as_json) {
  if (!status.ok()) {
    std::fprintf(stderr, "hvdrun status: %s\n",
                 status.status().message().c_str());
    return 1;
  }
  if (as_json) {
    PrintJson(*status);
  } else {
    const std::string text = StatusText(*status);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

int Show(const std::string& url, bool as_json) {
  return Print(Fetch(url), as_json);
}

}  // namespace

common::Result<SplitUrl> SplitStatusUrl(std::string_view url) {
  size_t rest = 0;
  for (const char* scheme : {"http://", "https://"}) {
    if (url.substr(0, std::string_view(scheme).size()) == scheme) {
      rest = std::string_view(scheme).size();
    }
  }
  const size_t path = rest == 0 ? 0 : url.find_first_of("/?#", rest);
  const size_t end = path == std::string_view::npos ? url.size() : path;
  if (rest == 0 || end == rest) {
    return common::Status::InvalidArgument(
        "not a status URL: " + common::Printable(url) +
        " (expected http://HOST:PORT/?token=...)");
  }
  SplitUrl split{std::string(url.substr(0, end)), "/"};
  if (end < url.size()) {
    std::string_view target = url.substr(end);
    target = target.substr(0, target.find('#'));
    split.target = target.empty() || target[0] != '/'
                       ? "/" + std::string(target)
                       : std::string(target);
  }
  return split;
}

bool IsRedirect(int code) {
  return code == 301 || code == 302 || code == 303 || code == 307 ||
         code == 308;
}

common::Result<SplitUrl> RedirectTarget(std::string_view location,
                                        std::string_view from, bool followed) {
  const std::string shown = common::Printable(location, 300);
  if (followed) {
    return common::Status::InvalidArgument(
        "followed one redirect already, to " + std::string(from) +
        ", which redirects again, to " + shown +
        ": not followed (is that hvdrun a standby too?)");
  }
  auto split = SplitStatusUrl(location);
  if (!split.ok()) {
    return common::Status::InvalidArgument(
        std::string(from) + " redirects to '" + shown +
        "', which is no http(s) URL: not followed");
  }
  return split;
}

int StatusMain(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string url;
  for (const std::string& arg : args) {
    if (arg == "--json") {
      as_json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (url.empty() && !arg.empty() && arg[0] != '-') {
      url = arg;
    } else {
      std::fprintf(stderr, "hvdrun status: unexpected argument %s\n%s",
                   arg.c_str(), kUsage);
      return 2;
    }
  }
  if (!url.empty()) return Show(url, as_json);
  auto jobs = RunningJobs();
  if (!jobs.ok()) {
    std::fprintf(stderr, "hvdrun status: %s\n",
                 jobs.status().message().c_str());
    return 1;
  }
  if (jobs->empty()) {
    std::fprintf(stderr,
                 "hvdrun status: no hvdrun job of this user runs on this "
                 "machine (none in %s); give the URL hvdrun printed\n",
                 JobFileDirectory().c_str());
    return 1;
  }
  // --json: one document for every job, so that a script parses it whole.
  int code = 0;
  nlohmann::json listed = nlohmann::json::array();
  for (const JobFile& job : *jobs) {
    if (!as_json) {
      std::printf("%shvdrun pid %d: %s\n", &job == &jobs->front() ? "" : "\n",
                  static_cast<int>(job.pid), job.url.c_str());
    }
    auto status = Fetch(job.url);
    if (!status.ok() && (!StillListed(job) || !StillRuns(job))) {
      // It ended between the listing and the question: not running, and so
      // not an error.
      if (as_json) {
        listed.push_back(
            {{"pid", job.pid}, {"url", job.url}, {"status", nullptr}});
      } else {
        std::printf("ended\n");
      }
      continue;
    }
    if (as_json && status.ok()) {
      listed.push_back(
          {{"pid", job.pid}, {"url", job.url}, {"status", *status}});
      continue;
    }
    code = std::max(code, Print(status, as_json));
  }
  if (as_json) PrintJson(listed);
  return code;
}

}  // namespace hvd::launcher
