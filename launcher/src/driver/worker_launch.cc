#include "driver/worker_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "hvd/common/env_vars.h"
#include "process/guard.h"
#include "process/remote_launch.h"
#include "remote/adopt_socket.h"
#include "remote/launch_backend.h"
#include "remote/munge_seal.h"
#include "remote/remote_guard.h"
#include "remote/srun.h"

extern char** environ;

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

// The framed launch message: sealed through munged at `munge_socket` when
// there is one. Never in clear then: no munged, no launch.
Result<std::string> LaunchMessage(
    const RemoteLaunch& launch,
    const std::optional<std::string>& munge_socket) {
  const std::string payload = EncodeRemoteLaunchPayload(launch);
  if (!munge_socket) return FrameLaunch(LaunchSeal::kPlain, payload);
  auto sealed = MungeSeal(payload, *munge_socket);
  if (!sealed.ok()) return sealed.status();
  return FrameLaunch(LaunchSeal::kMunge, *sealed);
}

}  // namespace

Result<LaunchContext> MakeLaunchContext(DriverEndpoint endpoint) {
  LaunchContext context;
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  context.hvdrun_path = *self;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return Status::Internal("cannot read the working directory");
  }
  context.working_dir = cwd;
  context.endpoint = std::move(endpoint);
  return context;
}

Result<WorkerProcess> LaunchWorker(const SlotAssignment& slot,
                                   int64_t worker_id,
                                   const LaunchContext& context,
                                   const LaunchConfig& config) {
  EnvList env = WorkerEnvironment(slot, worker_id, context.endpoint, config);
  const bool adoptable = config.adopt_grace.count() > 0;
  const std::unique_ptr<LaunchBackend> backend = MakeLaunchBackend(config);
  const bool here = backend->RunsHere(slot.host);
  Result<WorkerProcess> worker = Status::Internal("not started");
  if (here && !adoptable) {
    worker = SpawnGuard(slot,
                        GuardCommand(context.hvdrun_path, config.stop_grace,
                                     GuardMode::kLocal, config.command),
                        env);
  } else {
    // An adoptable worker here runs under the remote guard too, without
    // ssh (guard.h), so it outlives this hvdrun as a remote one does.
    // Sealed where the tool carries the message in clear (srun); the
    // guard here reads it from a pipe.
    const std::optional<std::string> munge_socket =
        here ? std::nullopt : backend->MungeSealSocket();
    const std::vector<std::string> guard = RemoteGuardArgv(
        context.hvdrun_path, config.stop_grace, config.remote_silence,
        std::chrono::duration_cast<std::chrono::milliseconds>(
            config.start_timeout),
        munge_socket);
    auto remote = here ? Result<std::vector<std::string>>(guard)
                       : backend->Command(slot.host, guard, kWorkerStepName);
    if (!remote.ok()) {
      worker = remote.status();
    } else {
      // The remote worker's environment, directory and command go to the
      // remote guard in the launch message; ssh itself gets hvdrun's own
      // environment, without the secret, and srun none (srun.h). The
      // guard here has that environment already.
      std::vector<std::string> environment;
      for (char** entry = environ; *entry != nullptr; ++entry) {
        environment.emplace_back(*entry);
      }
      RemoteLaunch launch{context.working_dir,
                          here ? env : ForwardedEnvironment(environment, env),
                          config.command, "", 0};
      if (adoptable) {
        launch.adopt_name = AdoptSocketName(config.job_id, worker_id);
        launch.adopt_grace_ms = config.adopt_grace.count();
      }
      Result<std::string> message = LaunchMessage(launch, munge_socket);
      if (!message.ok()) {
        worker = message.status();
      } else {
        worker = SpawnGuard(
            slot,
            GuardCommand(context.hvdrun_path, config.stop_grace,
                         here ? GuardMode::kAdoptableHere : GuardMode::kRemote,
                         *remote),
            {}, *message);
        if (worker.ok()) worker->adoptable = adoptable;
      }
    }
  }
  if (!worker.ok()) {
    return worker.status().WithContext("cannot start rank " +
                                       std::to_string(slot.layout.rank) +
                                       " on " + slot.host);
  }
  return worker;
}

Result<WorkerProcess> AdoptWorker(
    const SlotAssignment& slot, int64_t worker_id, const LaunchContext& context,
    const LaunchConfig& config,
    std::optional<std::chrono::seconds> connect_within) {
  LaunchConfig bounded = config;
  if (connect_within) {
    bounded.start_timeout = std::min(config.start_timeout, *connect_within);
  }
  const std::unique_ptr<LaunchBackend> backend = MakeLaunchBackend(bounded);
  const std::vector<std::string> adopt = {
      context.hvdrun_path, kAdoptFlag,
      AdoptSocketName(config.job_id, worker_id)};
  auto remote = backend->RunsHere(slot.host)
                    ? Result<std::vector<std::string>>(adopt)
                    : backend->Command(slot.host, adopt, kWorkerStepName);
  Result<WorkerProcess> worker = remote.status();
  if (remote.ok()) {
    // No launch message: the adopting end passes control bytes only.
    worker = SpawnGuard(slot,
                        GuardCommand(context.hvdrun_path, config.stop_grace,
                                     GuardMode::kRemote, *remote),
                        {}, "");
  }
  if (!worker.ok()) {
    return worker.status().WithContext("cannot adopt rank " +
                                       std::to_string(slot.layout.rank) +
                                       " on " + slot.host);
  }
  worker->adoptable = true;
  return worker;
}

}  // namespace hvd::launcher
