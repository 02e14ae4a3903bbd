// The local socket of an adoptable remote guard, and what crosses it.
//
// A remote guard whose job can be adopted (--adopt-grace-seconds, with the
// etcd backend) listens on a Unix socket on its host, and keeps its worker
// when hvdrun's connection ends or falls silent until an hvdrun that leads
// the job next reaches it there: that hvdrun runs `ssh host hvdrun
// --hvd-internal-adopt NAME` (adopt_client.h), which connects here and
// carries the same control bytes the ssh link carried (remote_launch.h).
// The guard answers with frames: a kind byte, the length as 4 bytes (big
// endian), the data; the worker's stdout and stderr, and at last its exit
// code. The socket lives in a folder of the user's own, mode 0700, and the
// guard takes a connection only from a process of the same user
// (SO_PEERCRED): whoever could run as that user could signal the worker
// anyway.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::launcher {

inline constexpr char kAdoptFlag[] = "--hvd-internal-adopt";

// The socket's name for worker `worker_id` of job `job_id`: fixed by both,
// so the hvdrun that leads next finds it from etcd's driver state alone,
// and short enough for a socket path whatever the job id.
std::string AdoptSocketName(const std::string& job_id, int64_t worker_id);
// Whether `name` is one AdoptSocketName makes (no '/', no "..").
bool IsAdoptSocketName(std::string_view name);
// This user's folder of guard sockets on this host: /tmp/hvd-adopt-<uid>.
std::string AdoptSocketFolder();
// Makes the folder (0700) or checks the one there: a directory, not a
// link, this user's, closed to others.
common::Status EnsureAdoptSocketFolder();

// A listening socket at `path` (replacing a stale one), non-blocking.
common::Result<int> ListenOnAdoptSocket(const std::string& path);
// The next connection on `listener` from a process of this user, or -1
// (none waiting, or a stranger's, which is closed).
int AcceptAdopter(int listener);
// A connection to the guard's socket at `path`.
common::Result<int> ConnectToAdoptSocket(const std::string& path);

enum class FrameKind : uint8_t { kStdout = 1, kStderr = 2, kExit = 3 };
// Data beyond this is sent as several frames.
inline constexpr size_t kMaxFrameData = 64 * 1024;

std::string EncodeFrame(FrameKind kind, std::string_view data);

struct Frame {
  FrameKind kind = FrameKind::kStdout;
  std::string data;
};

// Frames out of a byte stream that arrives in pieces.
class FrameReader {
 public:
  void Add(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, if one has arrived; a frame of an unknown kind
  // or over kMaxFrameData makes the stream malformed.
  std::optional<Frame> Next();
  bool malformed() const { return malformed_; }

 private:
  std::string buffer_;
  bool malformed_ = false;
};

}  // namespace hvd::launcher
