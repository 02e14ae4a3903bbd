#include "remote/adopt_client.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hvd/common/network_interfaces.h"
#include "remote/adopt_socket.h"

namespace hvd::launcher {

namespace {

constexpr int kNoWorker = 255;

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "hvdrun (adopting on %s): %s\n",
               common::ThisHostName().c_str(), message.c_str());
  return kNoWorker;
}

}  // namespace

int AdoptMain(int argc, char** argv) {
  if (argc != 3 || !IsAdoptSocketName(argv[2])) {
    std::fprintf(stderr, "hvdrun adopt: bad arguments (internal use)\n");
    return 2;
  }
  // A guard that closes its end must be an error on write, not our end.
  signal(SIGPIPE, SIG_IGN);
  const std::string path = AdoptSocketFolder() + "/" + argv[2];
  auto connected = ConnectToAdoptSocket(path);
  if (!connected.ok()) {
    return Fail("no worker to adopt at " + path + " (" +
                connected.status().message() +
                "): it ended, or its guard's grace ran out");
  }
  const int guard = *connected;
  FrameReader frames;
  bool input_open = true;
  while (true) {
    pollfd fds[2] = {{guard, POLLIN, 0},
                     {input_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return Fail("poll failed");
    if (fds[1].revents != 0) {
      char buffer[256];
      ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
      if (n > 0) {
        if (!WriteAll(guard, std::string(buffer, static_cast<size_t>(n)))) {
          return Fail("the worker's guard went away");
        }
      } else if (n == 0 || errno != EINTR) {
        // The adopting hvdrun is gone: the guard waits for the next one.
        return Fail("hvdrun's connection ended");
      }
    }
    if (fds[0].revents == 0) continue;
    char buffer[65536];
    ssize_t n = read(guard, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fail("the worker's guard went away");
    frames.Add(std::string_view(buffer, static_cast<size_t>(n)));
    while (auto frame = frames.Next()) {
      if (frame->kind == FrameKind::kExit) {
        return std::atoi(frame->data.c_str());
      }
      WriteAll(
          frame->kind == FrameKind::kStdout ? STDOUT_FILENO : STDERR_FILENO,
          frame->data);
    }
    if (frames.malformed()) return Fail("the guard's frames are malformed");
  }
}

}  // namespace hvd::launcher
