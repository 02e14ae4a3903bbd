#include "status/status_command.h"

#include <httplib.h>

#include <cstdio>
#include <nlohmann/json.hpp>

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
    "  one element per job (status null for a job that ended meanwhile).\n";

// Fetches URL's status.json: "http://host:port/...?token=T".
common::Result<nlohmann::json> Fetch(const std::string& url) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0) {
    return common::Status::InvalidArgument(
        "not a status URL: " + url + " (expected http://HOST:PORT/?token=...)");
  }
  const size_t path = url.find('/', scheme.size());
  const std::string origin = url.substr(0, path);
  std::string query;
  if (path != std::string::npos) {
    const size_t mark = url.find('?', path);
    if (mark != std::string::npos) query = url.substr(mark);
  }
  httplib::Client client(origin);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(std::chrono::seconds(5));
  auto answer = client.Get("/status.json" + query);
  if (!answer) {
    return common::Status::Transport("cannot reach " + origin + ": " +
                                     httplib::to_string(answer.error()));
  }
  if (answer->status != 200) {
    return common::Status::Transport(origin + " answered " +
                                     std::to_string(answer->status) + ": " +
                                     answer->body.substr(0, 300));
  }
  auto body = nlohmann::json::parse(answer->body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return common::Status::InvalidArgument(origin +
                                           " did not answer status JSON");
  }
  return body;
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
