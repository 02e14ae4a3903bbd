// Test helpers for the control-plane servers: a plain TCP client that sends
// exactly the bytes a test chooses (an attacker's, or ones no HTTP library
// would produce), and request bytes signed as docs/protocol.md says.
// Every read has a deadline.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>
#include <fstream>
#include <string>
#include <string_view>

#include "hvd/common/hmac.h"

namespace hvd::testing {

class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() {
    if (fd_ >= 0) close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Sends all of `bytes`; false once the peer has closed or reset.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Whatever arrives until the peer closes or `wait` passes.
  std::string ReadUntilClosed(std::chrono::milliseconds wait) {
    std::string got;
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return got;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
      char buffer[4096];
      ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_ = true;
        return got;
      }
      got.append(buffer, static_cast<size_t>(n));
    }
  }

  // One HTTP answer: its headers and Content-Length bytes of body, or what
  // came before the peer closed or `wait` passed.
  std::string ReadAnswer(std::chrono::milliseconds wait) {
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
      size_t end = pending_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        size_t at = pending_.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          length = std::stoul(pending_.substr(at + 16));
        }
        if (pending_.size() >= end + 4 + length) {
          std::string answer = pending_.substr(0, end + 4 + length);
          pending_.erase(0, end + 4 + length);
          return answer;
        }
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 ||
          poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return std::move(pending_);
      }
      char buffer[4096];
      ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_ = true;
        return std::move(pending_);
      }
      pending_.append(buffer, static_cast<size_t>(n));
    }
  }

  // True once the peer has closed (or reset) the connection, waiting at
  // most `wait`; what it sends before that is thrown away.
  bool WaitClosed(std::chrono::milliseconds wait) {
    if (!closed_) ReadUntilClosed(wait);
    return closed_;
  }

  // Non-blocking: has the peer closed the connection already?
  bool PeerClosed() {
    if (closed_) return true;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char buffer[4096];
    ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closed_ = true;
    }
    return closed_;
  }

 private:
  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;
};

// `count` connections that each send the start of a request, then one more
// header byte every 100 ms to each, for at most 60 s, until the server has
// closed every one of them.
class Slowloris {
 public:
  Slowloris(int port, int count) {
    for (int i = 0; i < count; ++i) {
      sockets_.push_back(std::make_unique<RawSocket>(port));
      if (sockets_.back()->Send("GET /ok HTTP/1.1\r\nX-Slow: ")) ++open_;
    }
    thread_ = std::thread([this] { Run(); });
  }
  ~Slowloris() {
    stop_ = true;
    thread_.join();
  }
  size_t open() const { return open_; }

  // Waits until the server has closed every connection; false if some are
  // still open after `wait`.
  bool WaitAllClosed(std::chrono::milliseconds wait) {
    auto give_up = std::chrono::steady_clock::now() + wait;
    while (open_ > 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return open_ == 0;
  }

 private:
  void Run() {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!stop_ && std::chrono::steady_clock::now() < give_up) {
      size_t open = 0;
      for (auto& socket : sockets_) {
        if (!socket->connected() || socket->PeerClosed()) continue;
        if (socket->Send("a")) ++open;
      }
      open_ = open;
      if (open == 0) return;
      // The attacker's pace, not a synchronisation.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::vector<std::unique_ptr<RawSocket>> sockets_;
  std::atomic<size_t> open_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// "METHOD target HTTP/1.1" with the four signature fields for `body`
// (signed with `secret` at `now_ms`), `extra` header lines and the body.
inline std::string SignedRequestBytes(
    const std::string& secret, const std::string& method,
    const std::string& target, const std::string& body = "",
    const std::string& extra = "",
    int64_t now_ms = common::WallClockMs()) {
  auto headers = common::SignNewRequest(secret, method, target, body, now_ms);
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: test\r\n";
  for (const auto& [name, value] : headers->Fields()) {
    out += name + ": " + value + "\r\n";
  }
  out += extra;
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

// This process's resident set (VmRSS of /proc/self/status), in KiB.
inline long ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The status code of an HTTP answer ("HTTP/1.1 401 ..." -> 401), or 0.
inline int StatusOf(const std::string& answer) {
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return 0;
  return std::stoi(answer.substr(9, 3));
}

}  // namespace hvd::testing
