// What crosses ssh (or srun) to start a remote worker, and the byte stream
// after it.
//
// The remote command line is only `exec <hvdrun> --hvd-internal-remote-guard
// ...`: the worker's working directory, environment (its own key
// included) and command travel on the tool's standard input as one
// message (sealed with MUNGE under srun, which carries it in clear), so
// no value is on a command line on either host, none needs shell quoting,
// and no size limit of a single argument applies. After the message the
// same stream carries control bytes from the local guard: a heartbeat
// every kHeartbeatInterval and the signals the driver forwards. Its end,
// or its silence, means the driver or the link is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
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

// The payload: NUL-terminated fields (a tag with the format's version,
// the directory, the adoption's socket name and grace, the count of
// variables, each as NAME=VALUE, then the command's words).
std::string EncodeRemoteLaunchPayload(const RemoteLaunch& launch);
// The payload, framed plain: "<payload bytes>\n<payload>".
std::string EncodeRemoteLaunch(const RemoteLaunch& launch);
// The payload. kInvalidArgument names what is wrong.
common::Result<RemoteLaunch> DecodeRemoteLaunch(std::string_view payload);
// Bound on the body a remote guard accepts.
inline constexpr size_t kMaxRemoteLaunchBytes = 64u << 20;

// How the message's body holds the payload. A frame's length line says
// which, so a guard can refuse the kind it must not take (remote_guard.h):
//   kPlain  "<body bytes>\n<body>"        the body is the payload;
//   kMunge  "munge <body bytes>\n<body>"  the body is a MUNGE credential
//           (remote/munge_seal.h) whose sealed content is the payload.
enum class LaunchSeal { kPlain, kMunge };
const char* LaunchSealName(LaunchSeal seal);

// `body` framed as `seal`.
std::string FrameLaunch(LaunchSeal seal, std::string_view body);

// Where a frame's body lies in the bytes read so far.
struct LaunchFrame {
  LaunchSeal seal = LaunchSeal::kPlain;
  size_t body_at = 0;
  size_t body_size = 0;
};
// The frame at the start of `input`, which may hold bytes after it (the
// control bytes): nullopt while the length line or the body is not whole
// yet; kInvalidArgument when the length line is malformed or over
// kMaxRemoteLaunchBytes, or longer than any valid one (so a stream
// without a newline is refused early). Pure: the bytes are untrusted
// (tests/fuzz/launch_frame_fuzz.cc).
common::Result<std::optional<LaunchFrame>> ParseLaunchFrame(
    std::string_view input);

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
