#include "remote/adopt_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hvd/common/hmac.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

std::string AdoptSocketName(const std::string& job_id, int64_t worker_id) {
  return common::Sha256Hex(job_id).substr(0, 16) + "-w" +
         std::to_string(worker_id) + ".sock";
}

bool IsAdoptSocketName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string AdoptSocketFolder() {
  return "/tmp/hvd-adopt-" + std::to_string(geteuid());
}

Status EnsureAdoptSocketFolder() {
  const std::string folder = AdoptSocketFolder();
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Transport("cannot make " + folder + ": " +
                             std::strerror(errno));
  }
  struct stat info {};
  if (lstat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
      info.st_uid != geteuid() || (info.st_mode & 077) != 0) {
    return Status::InvalidArgument(
        folder + " is not a folder of this user's closed to others; remove it");
  }
  return Status::Ok();
}

namespace {

Result<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return Status::InvalidArgument("socket path too long: " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

Result<int> ListenOnAdoptSocket(const std::string& path) {
  auto address = AddressOf(path);
  if (!address.ok()) return address.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Transport(std::strerror(errno));
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address),
           sizeof(*address)) != 0 ||
      listen(fd, 4) != 0) {
    const int error = errno;
    close(fd);
    return Status::Transport("cannot listen on " + path + ": " +
                             std::strerror(error));
  }
  return fd;
}

int AcceptAdopter(int listener) {
  int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return -1;
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
      peer.uid != geteuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

Result<int> ConnectToAdoptSocket(const std::string& path) {
  auto address = AddressOf(path);
  if (!address.ok()) return address.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Transport(std::strerror(errno));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&*address),
              sizeof(*address)) != 0) {
    const int error = errno;
    close(fd);
    return Status::NotFound(std::strerror(error));
  }
  return fd;
}

std::string EncodeFrame(FrameKind kind, std::string_view data) {
  std::string frame;
  frame.reserve(5 + data.size());
  frame.push_back(static_cast<char>(kind));
  const uint32_t size = static_cast<uint32_t>(data.size());
  for (int shift : {24, 16, 8, 0}) {
    frame.push_back(static_cast<char>((size >> shift) & 0xff));
  }
  frame.append(data);
  return frame;
}

std::optional<Frame> FrameReader::Next() {
  if (malformed_ || buffer_.size() < 5) return std::nullopt;
  const auto kind = static_cast<uint8_t>(buffer_[0]);
  uint32_t size = 0;
  for (int i = 1; i <= 4; ++i) {
    size = (size << 8) | static_cast<uint8_t>(buffer_[i]);
  }
  if (kind < 1 || kind > 3 || size > kMaxFrameData) {
    malformed_ = true;
    return std::nullopt;
  }
  if (buffer_.size() < 5 + size) return std::nullopt;
  Frame frame{static_cast<FrameKind>(kind), buffer_.substr(5, size)};
  buffer_.erase(0, 5 + size);
  return frame;
}

}  // namespace hvd::launcher
