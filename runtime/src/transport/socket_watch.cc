#include "transport/socket_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hvd::runtime {

namespace {

// Open through open(2), not opendir(3), so that the directory's descriptor
// is known to be this thread's own.
std::vector<int> OpenDescriptors() {
  std::vector<int> fds;
  const int dir_fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return fds;
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    close(dir_fd);
    return fds;
  }
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    int fd = std::atoi(entry->d_name);
    if (fd != dir_fd) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  return fds;
}

// The inode of the socket behind `fd` ("socket:[123]" in /proc/self/fd),
// or 0 when it is not a socket (or closed).
ino_t SocketInode(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  char target[64];
  const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  unsigned long long inode = 0;
  if (std::sscanf(target, "socket:[%llu]", &inode) != 1) return 0;
  return static_cast<ino_t>(inode);
}

// The local port of socket `fd`, or -1.
int LocalPort(int fd) {
  sockaddr_storage local;
  socklen_t length = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return -1;
  }
  if (local.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  }
  if (local.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
  }
  return -1;
}

bool IsConnected(int fd) {
  sockaddr_storage peer;
  socklen_t length = sizeof(peer);
  return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0;
}

}  // namespace

DescriptorSnapshot TakeDescriptorSnapshot() {
  DescriptorSnapshot snapshot;
  snapshot.fds = OpenDescriptors();
  for (int fd : snapshot.fds) {
    if (SocketInode(fd) == 0 || IsConnected(fd)) continue;
    const int port = LocalPort(fd);
    if (port > 0) snapshot.listening_ports.push_back(port);
  }
  return snapshot;
}

std::vector<SocketId> NewConnectedSockets(const DescriptorSnapshot& before) {
  std::vector<SocketId> sockets;
  for (int fd : OpenDescriptors()) {
    if (std::binary_search(before.fds.begin(), before.fds.end(), fd)) continue;
    const ino_t inode = SocketInode(fd);
    if (inode == 0 || !IsConnected(fd)) continue;
    const int port = LocalPort(fd);
    if (std::find(before.listening_ports.begin(), before.listening_ports.end(),
                  port) != before.listening_ports.end()) {
      continue;  // accepted by another server of this process
    }
    sockets.push_back({fd, inode});
  }
  return sockets;
}

void ShutdownSockets(const std::vector<SocketId>& sockets) {
  for (const SocketId& socket : sockets) {
    if (SocketInode(socket.fd) == socket.inode) {
      ::shutdown(socket.fd, SHUT_RDWR);
    }
  }
}

void SocketRegistry::Add(const std::vector<SocketId>& sockets) {
  std::lock_guard<std::mutex> lock(mu_);
  sockets_.insert(sockets_.end(), sockets.begin(), sockets.end());
}

bool SocketRegistry::ShutdownAll() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sockets_.empty()) return false;
  ShutdownSockets(sockets_);
  sockets_.clear();
  return true;
}

void SocketRegistry::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  sockets_.clear();
}

}  // namespace hvd::runtime
