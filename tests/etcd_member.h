// EtcdMember: one real etcd (Debian's etcd-server) a C++ test starts on
// free loopback ports in a temporary folder, and kills by its pid when the
// test ends. For the tests of the etcd client and of what runs on it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hvd/rendezvous/etcd_client.h"

namespace hvd::testing {

// A port nothing listens on now (another process may take it later).
inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Options for a client of the members on `ports` of 127.0.0.1.
inline rendezvous::EtcdOptions EtcdOptionsFor(
    const std::vector<int>& ports,
    std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
  rendezvous::EtcdOptions options;
  for (int port : ports) {
    rendezvous::EtcdEndpoint endpoint;
    endpoint.host = "127.0.0.1";
    endpoint.port = port;
    options.endpoints.push_back(endpoint);
  }
  options.deadline = deadline;
  options.connect_timeout = std::chrono::milliseconds(500);
  return options;
}

// TLS for a member: its certificate and key, the CA its clients must
// present certificates from, and a client's certificate and key (files).
struct EtcdMemberTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string client_cert_file;
  std::string client_key_file;
};

class EtcdMember {
 public:
  // Call from SetUp, under ASSERT: fails the test when etcd cannot start.
  // With `tls`, clients must speak https and present a certificate.
  void Start(std::optional<EtcdMemberTls> tls = std::nullopt) {
    tls_ = std::move(tls);
    char folder[] = "/tmp/hvd-etcd-test-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    dir_ = folder;
    // A port another process took between the probe and etcd's bind ends
    // etcd at once: start again on new ports.
    for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {
      TryStart();
      if (::testing::Test::HasFatalFailure()) return;
    }
    ASSERT_GT(pid_, 0) << "etcd did not start; its log: " << dir_ << "/log";
  }

  ~EtcdMember() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  int client_port() const { return client_port_; }
  pid_t pid() const { return pid_; }

  // Options for a client of this member (TLS files included, if any).
  rendezvous::EtcdOptions ClientOptions(
      std::chrono::milliseconds deadline = std::chrono::seconds(5)) const {
    rendezvous::EtcdOptions options = EtcdOptionsFor({client_port_}, deadline);
    if (tls_) {
      options.endpoints[0].scheme = "https";
      options.ca_file = tls_->ca_file;
      options.cert_file = tls_->client_cert_file;
      options.key_file = tls_->client_key_file;
    }
    return options;
  }

 private:
  void TryStart() {
    using namespace std::chrono_literals;
    client_port_ = FreeLoopbackPort();
    const int peer_port = FreeLoopbackPort();
    const std::string client = std::string(tls_ ? "https" : "http") +
                               "://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
    std::vector<std::string> args = {
        "etcd",         "--name",
        "test",         "--data-dir",
        dir_ + "/data", "--listen-client-urls",
        client,         "--advertise-client-urls",
        client,         "--listen-peer-urls",
        peer,           "--initial-advertise-peer-urls",
        peer,           "--initial-cluster",
        "test=" + peer};
    if (tls_) {
      for (const std::string& arg :
           {std::string("--cert-file"), tls_->cert_file,
            std::string("--key-file"), tls_->key_file,
            std::string("--client-cert-auth"), std::string("--trusted-ca-file"),
            tls_->ca_file}) {
        args.push_back(arg);
      }
    }
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int log =
          open((dir_ + "/log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(log, 1);
      dup2(log, 2);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execvp("etcd", argv.data());
      _exit(127);
    }
    // Up once a range answers; an exit first means the ports were taken
    // (or no etcd: 127).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    rendezvous::EtcdClient probe(ClientOptions(500ms));
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 127)
            << "etcd is missing: apt-get install etcd-server (scripts/test.sh "
               "installs it)";
        return;
      }
      if (probe.Range("probe").ok()) {
        pid_ = pid;
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }

  std::string dir_;
  pid_t pid_ = 0;
  int client_port_ = 0;
  std::optional<EtcdMemberTls> tls_;
};

}  // namespace hvd::testing
