#include "driver/driver.h"
#include "driver/driver_loop.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "driver/discovery.h"
#include "driver/discovery_loop.h"
#include "driver/driver_threads.h"
#include "driver/etcd_job.h"
#include "driver/job_status.h"
#include "driver/worker_launch.h"
#include "hvd/common/env.h"
#include "hvd/common/hmac.h"
#include "hvd/common/job_signing_key.h"
#include "hvd/common/logging.h"
#include "hvd/common/network_interfaces.h"
#include "hvd/common/secret_file.h"
#include "hvd/notify/client.h"
#include "hvd/rendezvous/server.h"
#include "policy/job_policy.h"
#include "process/output_relay.h"
#include "remote/host_address.h"
#include "remote/host_check_run.h"
#include "slurm/slurm_jobs.h"
#include "status/job_record.h"
#include "status/status_snapshots.h"

namespace hvd::launcher {

namespace {

sigset_t DriverSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

int Fail(const std::string& message) {
  common::Announce("hvdrun: " + message);
  return 1;
}

}  // namespace

void BlockDriverSignals() {
  sigset_t set = DriverSignals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
  // A guard that exits between two control bytes, or a closed stdout, must
  // be an EPIPE, not the end of hvdrun. Guards restore the default for the
  // worker.
  signal(SIGPIPE, SIG_IGN);
}

int RunJob(const LaunchConfig& given) {
  LaunchConfig config = given;
  sigset_t handled = DriverSignals();
  int signals = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) return Fail("signalfd failed");
  struct CloseOnReturn {
    int fd;
    ~CloseOnReturn() { close(fd); }
  } close_signals{signals};

  common::SecretFileRules secret_rules;
  secret_rules.flag = "--job-secret-file";
  secret_rules.min_chars = 32;
  secret_rules.private_to_user = true;
  auto secret =
      config.job_secret_file.empty()
          ? common::NewJobSecret()
          : common::SecretFromFile(config.job_secret_file, secret_rules);
  if (!secret.ok()) return Fail(secret.status().message());
  std::unique_ptr<EtcdJob> etcd;
  std::optional<DriverState> resumed;
  // The status server: a standby's from the start (it says who leads and
  // sends readers there), the same one the driver's once it leads.
  const bool with_status = config.status_bind != kNoStatusServer;
  std::unique_ptr<JobStatus> status;
  if (config.rendezvous_backend == RendezvousBackend::kEtcd && config.standby) {
    if (with_status) {
      auto started = JobStatus::Start(config, *secret);
      if (!started.ok()) return Fail(started.status().message());
      status = std::move(*started);
    }
    std::string text;
    int signal = 0;
    auto standby = EtcdJob::Standby(config, *secret, signals, text, signal,
                                    [&status](const StandbyView& view) {
                                      if (status) status->Follow(view);
                                    });
    if (!standby.ok()) {
      if (signal != 0) return 128 + signal;
      return Fail(standby.status().message());
    }
    auto decoded = DecodeDriverState(text);
    if (!decoded.ok()) return Fail(decoded.status().message());
    etcd = std::move(*standby);
    resumed = std::move(*decoded);
  } else if (config.rendezvous_backend == RendezvousBackend::kEtcd) {
    if (config.job_id.empty()) {
      auto id = common::NewJobSecret();
      if (!id.ok()) return Fail(id.status().message());
      config.job_id = "hvd-" + id->substr(0, 12);
    }
    auto claimed = EtcdJob::Claim(config, *secret, config.start_timeout);
    if (!claimed.ok()) return Fail(claimed.status().message());
    etcd = std::move(*claimed);
    common::Announce("hvdrun: leads job '" + config.job_id + "' in etcd at " +
                     config.rendezvous_endpoint + " (keys under " +
                     etcd->prefix() + ")");
  }
  // The first discovery run must succeed: there is nothing to fall back on
  // yet. Hosts come and go: the server binds where any listed host can
  // reach it, unless every host given up front is this machine.
  std::vector<HostSlots> hosts = config.hosts;
  if (config.elastic && !config.discovery_script.empty()) {
    auto first = RunDiscovery(config.discovery_script, config.slots_per_host,
                              config.discovery_timeout);
    if (!first.ok()) return Fail(first.status().message());
    hosts = *first;
  }
  auto address = ChooseServerAddress(hosts, config.network_interface);
  if (!address.ok()) return Fail(address.status().message());
  rendezvous::ServerOptions options;
  options.bind_host = *address;
  options.port = config.rendezvous_port;
  options.secret = *secret;
  // Members seal what they write to etcd with their generation's key.
  options.generation_keys =
      config.rendezvous_backend == RendezvousBackend::kEtcd;
  // Every worker keeps a connection and may hold a long-poll.
  const int workers = config.max_np > 0 ? config.max_np : config.num_proc;
  options.threads = std::max<size_t>(config.elastic ? 256 : 128,
                                     2 * static_cast<size_t>(workers) + 16);
  auto server = rendezvous::RendezvousServer::Start(options);
  if (!server.ok()) return Fail(server.status().message());
  auto signer = common::JobSigningKey::FromSecret(*secret);
  if (!signer.ok()) return Fail(signer.status().message());
  auto launch = MakeLaunchContext(DriverEndpoint{
      *address, (*server)->port(), *secret, signer->public_key()});
  if (!launch.ok()) return Fail(launch.status().message());
  spdlog::info("hvdrun: rendezvous server on {}:{}", *address,
               (*server)->port());
  if (etcd) {
    etcd->SaveDriverAddress(*address + ":" + std::to_string((*server)->port()));
  }
  Driver driver(config, **server, *launch, hosts, etcd.get(),
                std::move(resumed));

  if (with_status && !status) {
    auto started = JobStatus::Start(config, *secret);
    if (!started.ok()) return Fail(started.status().message());
    status = std::move(*started);
  }
  if (status) status->Lead(driver);
  if (etcd) {
    LeaderPage off;
    off.host = common::ThisHostName();
    etcd->SaveStatusPage(status ? status->Page() : off);
  }

  const int code = driver.Run(signals);
  // Before the driver goes: the server's handlers read its snapshots.
  status.reset();
  (*server)->Stop();
  return code;
}

}  // namespace hvd::launcher
