// JobStatus: this hvdrun's status server and its job file, from the moment
// it has something to show to its end. A standby starts it as soon as it
// stands by and answers as one (StatusServer::Follow); when it takes the
// job over, or in an hvdrun that leads from the start, the same server
// serves the driver's snapshots (Lead). One listener for both phases: the
// URL printed at the start, and listed by `hvdrun status`, stays the one
// to read.
//
// Owned by RunJob's thread; Follow may be called from EtcdJob::Standby's
// watch (the same thread). The destructor removes the job file, then stops
// the server.
#pragma once

#include <memory>
#include <string>

#include "driver/driver_loop.h"
#include "hvd/common/status.h"
#include "job/launch_config.h"
#include "status/standby_status.h"
#include "status/status_server.h"

namespace hvd::launcher {

// The status page's read token: --status-token-file's; else, with
// --job-secret-file, the one every hvdrun of the job derives from the
// secret (StatusTokenFromJobSecret), so a standby's redirect carries a
// token the leader takes; else a new one.
common::Result<std::string> ChooseStatusToken(const LaunchConfig& config,
                                              const std::string& secret);

class JobStatus {
 public:
  // Starts the server (--status-bind, which must not be none), prints its
  // URL and writes the job file.
  static common::Result<std::unique_ptr<JobStatus>> Start(
      const LaunchConfig& config, const std::string& secret);
  ~JobStatus();
  JobStatus(const JobStatus&) = delete;
  JobStatus& operator=(const JobStatus&) = delete;

  void Follow(const StandbyView& view) { server_->Follow(view); }
  // Serves `driver`'s snapshots from now on. WARNING: `driver` must
  // outlive this object (its handlers call it until the destructor).
  void Lead(Driver& driver);
  // What a leader publishes of this server in etcd.
  LeaderPage Page() const;

 private:
  JobStatus(std::unique_ptr<StatusServer> server, std::string job_file);

  std::unique_ptr<StatusServer> server_;
  std::string job_file_;  // "": `hvdrun status` does not list this one
};

}  // namespace hvd::launcher
