// What crosses ssh to start a remote worker, and the byte stream after it.
//
// The remote command line is only `exec <hvdrun> --hvd-internal-remote-guard
// ...`: the worker's working directory, environment (the job secret
// included) and command travel on ssh's standard input as one message, so
// no value is on a command line on either host, none needs shell quoting,
// and no size limit of a single argument applies. After the message the
// same stream carries control bytes from the local guard: a heartbeat
// every kHeartbeatInterval and the signals the driver forwards. Its end,
// or its silence, means the driver or the link is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"
#include "job/worker_env.h"

namespace hvd::launcher {

struct RemoteLaunch {
  std::string working_dir;
  EnvList env;  // set over the remote login's environment
  std::vector<std::string> argv;
  // With a name: the worker outlives hvdrun's link for `adopt_grace_ms`,
  // while its guard waits on the socket of that name for the hvdrun that
  // leads the job next (remote/adopt_socket.h). Empty: it does not.
  std::string adopt_name;
  int64_t adopt_grace_ms = 0;
};

// "<payload bytes>\n<payload>": the payload is NUL-terminated fields (a
// tag with the format's version, the directory, the adoption's socket
// name and grace, the count of variables, each as NAME=VALUE, then the
// command's words).
std::string EncodeRemoteLaunch(const RemoteLaunch& launch);
// The payload after the length line. kInvalidArgument names what is wrong.
common::Result<RemoteLaunch> DecodeRemoteLaunch(std::string_view payload);
// Bound on the payload a remote guard accepts.
inline constexpr size_t kMaxRemoteLaunchBytes = 64u << 20;

// Control bytes after the message: 0 is a heartbeat, 1-64 a signal.
inline constexpr unsigned char kHeartbeatByte = 0;
inline constexpr std::chrono::milliseconds kHeartbeatInterval{1000};

// Whether hvdrun's variable `name` is given to remote workers. Everything
// is, as horovodrun does, except what describes the launching host or
// session rather than the job: HOSTNAME, PWD, OLDPWD, SHLVL, _, SSH_*,
// XDG_RUNTIME_DIR, XDG_SESSION_*, *CUDA_VISIBLE_DEVICES (each host has its
// own devices), BASH_FUNC_* (exported shell functions), SLURM_* and
// SLURMD_* (hvdrun's batch step's: a worker step has its own, and a worker
// over ssh is in no step), and HVD_SECRET_KEY, HVD_WORKER_KEY and
// HVD_GENERATIONS_KEY: a worker gets only its own, from the launch message.
bool IsForwardedVariable(std::string_view name);

// The variables of `environ` (NAME=VALUE strings) that are forwarded, then
// `overrides` (the worker's own and -x), which win.
EnvList ForwardedEnvironment(const std::vector<std::string>& environ,
                             const EnvList& overrides);

}  // namespace hvd::launcher
