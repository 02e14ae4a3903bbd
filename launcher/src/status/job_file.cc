#include "status/job_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace hvd::launcher {

using common::Status;

namespace {

// Creates the directory if needed and checks that only this user can use
// it.
Status CheckDirectory(const std::string& dir, bool create) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::InvalidArgument("cannot create " + dir + ": " +
                                   std::strerror(errno));
  }
  struct stat info;
  if (lstat(dir.c_str(), &info) != 0) {
    return Status::NotFound("no jobs directory " + dir + ": " +
                            std::strerror(errno));
  }
  if (!S_ISDIR(info.st_mode) || info.st_uid != geteuid() ||
      (info.st_mode & 0077) != 0) {
    return Status::InvalidArgument(
        dir +
        " is not a directory of this user's that only it can use; "
        "remove it, or set XDG_RUNTIME_DIR");
  }
  return Status::Ok();
}

std::optional<ProcessStat> ReadProcessStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcessStat(text.str());
}

}  // namespace

std::optional<ProcessStat> ParseProcessStat(const std::string& text) {
  // "PID (COMM) S ..." where COMM may hold spaces and parentheses: the
  // fields after the last ')' are plain, state first and start time the
  // 20th of them (field 22 of proc(5)).
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  ProcessStat stat;
  std::string field;
  if (!(fields >> stat.state)) return std::nullopt;
  for (int i = 0; i < 18; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  if (!(fields >> stat.start) || stat.start < 0) return std::nullopt;
  return stat;
}

int64_t OwnProcessStart() {
  auto stat = ReadProcessStat(getpid());
  return stat ? stat->start : 0;
}

bool StillRuns(const JobFile& job) {
  if (job.pid <= 0) return false;
  auto stat = ReadProcessStat(job.pid);
  if (!stat) {
    // No /proc entry: gone, unless /proc is not there to ask.
    return kill(job.pid, 0) == 0 || errno != ESRCH;
  }
  if (stat->state == 'Z' || stat->state == 'X') return false;
  return job.process_start == 0 || stat->start == job.process_start;
}

namespace {

std::string JobFilePath(pid_t pid) {
  return JobFileDirectory() + "/" + std::to_string(pid) + ".json";
}

}  // namespace

bool StillListed(const JobFile& job) {
  struct stat info;
  return ::stat(JobFilePath(job.pid).c_str(), &info) == 0;
}

std::string JobFileDirectory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime) return std::string(runtime) + "/hvd";
  return "/tmp/hvd-" + std::to_string(geteuid());
}

common::Result<std::string> WriteJobFile(const JobFile& job) {
  const std::string dir = JobFileDirectory();
  Status usable = CheckDirectory(dir, true);
  if (!usable.ok()) return usable;
  const std::string path = JobFilePath(job.pid);
  const std::string temporary = path + ".new";
  nlohmann::json body{{"pid", job.pid},
                      {"url", job.url},
                      {"command", job.command},
                      {"started_ms", job.started_ms},
                      {"process_start", job.process_start}};
  const std::string text =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  int fd = open(temporary.c_str(),
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Status::InvalidArgument("cannot write " + temporary + ": " +
                                   std::strerror(errno));
  }
  bool written =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written || rename(temporary.c_str(), path.c_str()) != 0) {
    unlink(temporary.c_str());
    return Status::InvalidArgument("cannot write " + path);
  }
  return path;
}

void RemoveJobFile(const std::string& path) {
  if (!path.empty()) unlink(path.c_str());
}

common::Result<std::vector<JobFile>> RunningJobs() {
  const std::string dir = JobFileDirectory();
  Status usable = CheckDirectory(dir, false);
  if (!usable.ok()) {
    if (usable.code() == common::Code::kNotFound) {
      return std::vector<JobFile>{};
    }
    return usable;
  }
  std::vector<JobFile> jobs;
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) {
    return Status::InvalidArgument("cannot list " + dir + ": " +
                                   std::strerror(errno));
  }
  while (dirent* entry = readdir(listing)) {
    std::string name = entry->d_name;
    const std::string suffix = ".json";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string path = dir + "/" + name;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto body = nlohmann::json::parse(text.str(), nullptr, false);
    if (body.is_discarded() || !body.is_object() ||
        !body.value("pid", nlohmann::json()).is_number_integer() ||
        !body.value("url", nlohmann::json()).is_string()) {
      continue;
    }
    JobFile job;
    job.pid = body["pid"].get<pid_t>();
    job.url = body["url"].get<std::string>();
    job.command = body.value("command", "");
    job.started_ms = body.value("started_ms", int64_t{0});
    job.process_start = body.value("process_start", int64_t{0});
    if (!StillRuns(job)) {
      unlink(path.c_str());  // its hvdrun is gone (its pid may live on)
      continue;
    }
    jobs.push_back(std::move(job));
  }
  closedir(listing);
  std::sort(jobs.begin(), jobs.end(), [](const JobFile& a, const JobFile& b) {
    return a.started_ms < b.started_ms;
  });
  return jobs;
}

}  // namespace hvd::launcher
