#include "socket_watch.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

namespace hvd::runtime {

std::vector<int> OpenDescriptors() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    int fd = std::atoi(entry->d_name);
    if (fd != own) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::vector<SocketId> NewConnectedSockets(const std::vector<int>& before) {
  std::vector<SocketId> sockets;
  for (int fd : OpenDescriptors()) {
    if (std::binary_search(before.begin(), before.end(), fd)) continue;
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
    sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) {
      continue;  // a listener, or not connected
    }
    sockets.push_back({fd, info.st_ino});
  }
  return sockets;
}

void ShutdownSockets(const std::vector<SocketId>& sockets) {
  for (const SocketId& socket : sockets) {
    struct stat info;
    if (fstat(socket.fd, &info) == 0 && info.st_ino == socket.inode) {
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
