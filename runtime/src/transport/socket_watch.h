// Finding and cutting a Gloo context's TCP connections. Gloo keeps its
// sockets private and Context::closeConnections() does not wake an
// operation in progress (measured with Debian's Gloo: it still waits out
// its timeout), while a connection shut down under it fails the operation
// at once, as a dead peer does. So the runtime notes the connected sockets
// that appear while a context connects, with their inodes, and an abort
// shuts down those that are still the same sockets.
//
// Other threads of the process may open sockets meanwhile: above all the
// worker's notification server accepting the driver's push or probe. A
// socket whose local port is one this process already listened on before
// the connect was accepted by such a server, and is not the context's.
// Sockets are inspected only by name (/proc/self/fd) and by getsockname /
// getpeername, never with fstat: a descriptor another thread has just
// created is not this thread's to use (ThreadSanitizer reports that).
#pragma once

#include <sys/types.h>

#include <mutex>
#include <vector>

namespace hvd::runtime {

struct SocketId {
  int fd = -1;
  ino_t inode = 0;
};

// The process's descriptors, and the ports its listening sockets listen on.
struct DescriptorSnapshot {
  std::vector<int> fds;  // sorted
  std::vector<int> listening_ports;
};
DescriptorSnapshot TakeDescriptorSnapshot();

// Connected sockets open now that were not open at `before`, except those
// accepted by a listener that existed then.
std::vector<SocketId> NewConnectedSockets(const DescriptorSnapshot& before);

// shutdown(2) on each socket that still has its inode; never closes (the
// owner does), so a descriptor number reused since is left alone.
void ShutdownSockets(const std::vector<SocketId>& sockets);

// The connections of a generation's contexts, which grow when a process
// set is added; Abort (from any thread) shuts them all down once.
class SocketRegistry {
 public:
  void Add(const std::vector<SocketId>& sockets);
  // Returns false when there was nothing left to shut down.
  bool ShutdownAll();
  void Clear();

 private:
  std::mutex mu_;
  std::vector<SocketId> sockets_;
};

}  // namespace hvd::runtime
