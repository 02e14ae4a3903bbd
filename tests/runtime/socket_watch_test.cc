// SocketWatch: which sockets a context's connect is taken to own, and what
// an abort shuts down.
#include "transport/socket_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace hvd::runtime {
namespace {

// A loopback listener on an ephemeral port.
int Listen(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 8), 0);
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

bool Has(const std::vector<SocketId>& sockets, int fd) {
  return std::any_of(sockets.begin(), sockets.end(),
                     [fd](const SocketId& s) { return s.fd == fd; });
}

// A peer a connection can reach with recv() telling whether it was shut.
bool ShutForReading(int fd) {
  char byte;
  return recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
}

TEST(SocketWatchTest, NewConnectionsCountButNotThoseAnOlderListenerAccepted) {
  int server_port = 0, peer_port = 0;
  const int server = Listen(&server_port);  // e.g. the notification server
  const int snapshot_listener = Listen(&peer_port);
  const int old_connection = Connect(server_port);
  const int old_accepted = accept(server, nullptr, nullptr);

  const DescriptorSnapshot before = TakeDescriptorSnapshot();
  EXPECT_NE(std::find(before.listening_ports.begin(),
                      before.listening_ports.end(), server_port),
            before.listening_ports.end());
  const int outbound = Connect(peer_port);  // the context's connection
  const int peer_side = accept(snapshot_listener, nullptr, nullptr);
  const int stranger = Connect(server_port);  // another thread's client...
  const int accepted = accept(server, nullptr, nullptr);  // ...accepted

  std::vector<SocketId> found = NewConnectedSockets(before);
  EXPECT_TRUE(Has(found, outbound));
  EXPECT_FALSE(Has(found, accepted));
  EXPECT_FALSE(Has(found, peer_side));  // accepted by an older listener too
  EXPECT_FALSE(Has(found, old_connection));
  EXPECT_FALSE(Has(found, old_accepted));
  EXPECT_TRUE(Has(found, stranger));  // outbound: cannot be told apart
  for (int fd : {server, snapshot_listener, old_connection, old_accepted,
                 outbound, peer_side, stranger, accepted}) {
    close(fd);
  }
}

TEST(SocketWatchTest, ShutdownReachesOnlyTheSameSocket) {
  int port = 0;
  const int listener = Listen(&port);
  const DescriptorSnapshot before = TakeDescriptorSnapshot();
  const int first = Connect(port);
  const int first_peer = accept(listener, nullptr, nullptr);
  std::vector<SocketId> found = NewConnectedSockets(before);
  ASSERT_TRUE(Has(found, first));

  // The descriptor number is reused by another socket: left alone.
  close(first);
  const int second = Connect(port);
  const int second_peer = accept(listener, nullptr, nullptr);
  ASSERT_EQ(second, first);
  ShutdownSockets(found);
  EXPECT_FALSE(ShutForReading(second_peer));

  // The same socket: shut down, and its peer reads end-of-stream.
  found = NewConnectedSockets(before);
  ASSERT_TRUE(Has(found, second));
  ShutdownSockets(found);
  EXPECT_TRUE(ShutForReading(second_peer));
  for (int fd : {listener, first_peer, second, second_peer}) close(fd);
}

}  // namespace
}  // namespace hvd::runtime
