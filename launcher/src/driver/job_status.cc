#include "driver/job_status.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "hvd/common/env.h"
#include "hvd/common/hmac.h"
#include "hvd/common/logging.h"
#include "hvd/common/network_interfaces.h"
#include "status/job_file.h"

namespace hvd::launcher {

namespace {

// --status-bind: "ADDR:PORT", "ADDR", ":PORT", "[V6]:PORT".
common::Result<StatusServerOptions> StatusBind(const std::string& bind) {
  StatusServerOptions options;
  std::string host = bind, port;
  if (!bind.empty() && bind[0] == '[') {
    const size_t close = bind.find(']');
    if (close == std::string::npos) {
      return common::Status::InvalidArgument("--status-bind " + bind +
                                             ": no ']' after the address");
    }
    host = bind.substr(1, close - 1);
    if (close + 1 < bind.size() && bind[close + 1] == ':') {
      port = bind.substr(close + 2);
    }
  } else if (std::count(bind.begin(), bind.end(), ':') == 1) {
    host = bind.substr(0, bind.find(':'));
    port = bind.substr(bind.find(':') + 1);
  }
  if (!host.empty()) options.bind_host = host;
  if (!port.empty()) {
    auto number = common::ParseInt(port, "--status-bind port", 0, 65535);
    if (!number.ok()) return number.status();
    options.port = static_cast<int>(*number);
  }
  return options;
}

}  // namespace

common::Result<std::string> ChooseStatusToken(const LaunchConfig& config,
                                              const std::string& secret) {
  if (!config.status_token_file.empty()) {
    return StatusTokenFrom(config.status_token_file);
  }
  if (!config.job_secret_file.empty()) return StatusTokenFromJobSecret(secret);
  // A second secret, unrelated to the job's.
  return common::NewJobSecret();
}

JobStatus::JobStatus(std::unique_ptr<StatusServer> server, std::string job_file)
    : server_(std::move(server)), job_file_(std::move(job_file)) {}

common::Result<std::unique_ptr<JobStatus>> JobStatus::Start(
    const LaunchConfig& config, const std::string& secret) {
  auto bind = StatusBind(config.status_bind);
  if (!bind.ok()) return bind.status();
  auto token = ChooseStatusToken(config, secret);
  if (!token.ok()) return token.status();
  bind->token = *token;
  auto server = StatusServer::Start(*bind, nullptr);
  if (!server.ok()) return server.status();
  const std::string url = (*server)->url();
  common::Announce("hvdrun: status page: " + url);
  auto job_file = WriteJobFile({getpid(), url, FactsOf(config).command,
                                common::WallClockMs(), OwnProcessStart()});
  if (!job_file.ok()) {
    spdlog::warn("hvdrun: `hvdrun status` will not find this job: {}",
                 job_file.status().message());
  }
  return std::unique_ptr<JobStatus>(new JobStatus(
      std::move(*server), job_file.ok() ? *job_file : std::string()));
}

JobStatus::~JobStatus() {
  // Gone from the listing before the server stops answering (job_file.h).
  if (!job_file_.empty()) RemoveJobFile(job_file_);
  server_->Stop();
}

void JobStatus::Lead(Driver& driver) {
  server_->Lead([&driver] {
    using namespace std::chrono_literals;
    return driver.snapshots().Get(1000ms, 1000ms);
  });
}

LeaderPage JobStatus::Page() const {
  return PageToPublish(server_->bind_host(), server_->base_url(),
                       common::ThisHostName());
}

}  // namespace hvd::launcher
