#include "status/status_command.h"

#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hvd/common/env_vars.h"
#include "hvd/common/http_message.h"
#include "hvd/common/secret_file.h"
#include "hvd/common/status.h"
#include "status/job_file.h"
#include "status/status_server.h"

namespace hvd::launcher {

namespace {

constexpr char kUsage[] =
    "usage: hvdrun status [--json] [--token-file FILE] [URL]\n"
    "  Shows a running job: without URL, every job of this user on this\n"
    "  machine; with URL (as hvdrun printed it), that job. The URL's read\n"
    "  token is best left out of it (other users see command lines in\n"
    "  ps): --token-file FILE reads it from FILE (as --status-token-file\n"
    "  wrote it), else the environment variable HVD_STATUS_TOKEN gives it;\n"
    "  a URL with ?token=... still works, with a warning.\n"
    "  --json prints the status as JSON: with URL, that job's\n"
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
// `token`, when not empty, goes as `Authorization: Bearer`, which the
// server takes before a ?token= of the target.
common::Result<Got> Get(const SplitUrl& url, const std::string& token) {
  httplib::Client client(url.origin);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(std::chrono::seconds(5));
  client.set_follow_location(false);  // one redirect, followed here
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto answer = client.Get(url.target, headers);
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

// Fetches URL's status.json: "http://host:port/...?token=T", or without
// the ?token= when `token` is given. A standby redirects to its leader:
// followed once (with `token` too: every hvdrun of a job takes the same
// one), and what the standby said goes along as the member `standby`.
// Bounded: two requests at most.
common::Result<nlohmann::json> Fetch(const std::string& url,
                                     const std::string& token) {
  auto split = SplitStatusUrl(url);
  if (!split.ok()) return split.status();
  const size_t mark = split->target.find('?');
  SplitUrl first{split->origin,
                 "/status.json" + (mark == std::string::npos
                                       ? std::string()
                                       : split->target.substr(mark))};
  auto got = Get(first, token);
  if (!got.ok()) return got.status();
  if (!IsRedirect(got->code)) return StatusJsonOf(first, *got);
  auto said = nlohmann::json::parse(got->body, nullptr, false);
  const nlohmann::json standby = StatusField(said, "standby");
  auto next = RedirectTarget(got->location, first.origin, false);
  if (!next.ok()) return next.status();
  auto then = Get(*next, token);
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

int Show(const std::string& url, const std::string& token_file, bool as_json) {
  auto token = ChooseReadToken(url, token_file,
                               std::getenv(common::env_vars::kHvdStatusToken));
  if (!token.ok()) {
    std::fprintf(stderr, "hvdrun status: %s\n",
                 token.status().message().c_str());
    return 2;
  }
  if (!token->warning.empty()) {
    std::fprintf(stderr, "hvdrun status: warning: %s\n",
                 token->warning.c_str());
  }
  return Print(Fetch(url, token->token), as_json);
}

// Whether the query of `url` has a parameter `token`.
bool CarriesToken(std::string_view url) {
  size_t query = url.find('?');
  if (query == std::string_view::npos) return false;
  std::string_view rest = url.substr(query + 1);
  rest = rest.substr(0, rest.find('#'));
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view param = rest.substr(0, amp);
    if (param.substr(0, param.find('=')) == "token") return true;
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return false;
}

}  // namespace

common::Result<ReadToken> ChooseReadToken(std::string_view url,
                                          const std::string& token_file,
                                          const char* env_token) {
  ReadToken chosen;
  if (CarriesToken(url)) {
    chosen.warning =
        "the URL's ?token= is on hvdrun's command line, where every user of "
        "this machine can read it (ps); give the URL without it, and the "
        "token with --token-file FILE or in the environment variable " +
        std::string(common::env_vars::kHvdStatusToken);
  }
  if (!token_file.empty()) {
    common::SecretFileRules rules;
    rules.flag = "--token-file";
    rules.noun = "token";
    rules.make_missing = false;  // a reader's file: made by the job's hvdrun
    auto token = common::SecretFromFile(token_file, rules);
    if (!token.ok()) return token.status();
    chosen.token = *token;
  } else if (env_token != nullptr) {
    chosen.token = env_token;
  }
  return chosen;
}

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
  std::string token_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--json") {
      as_json = true;
    } else if (arg == "--token-file" && i + 1 < args.size()) {
      token_file = args[++i];
    } else if (arg.rfind("--token-file=", 0) == 0) {
      token_file = arg.substr(std::string_view("--token-file=").size());
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
  if (!url.empty()) return Show(url, token_file, as_json);
  if (!token_file.empty()) {
    // The jobs listed here carry their own tokens; one token for them all
    // would be a mistake to pass over in silence.
    std::fprintf(stderr, "hvdrun status: --token-file needs a URL\n%s", kUsage);
    return 2;
  }
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
    auto status = Fetch(job.url, "");  // the job file's URL has its token
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
