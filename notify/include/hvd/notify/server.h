// NotificationServer: the small HTTP server every elastic worker runs so
// the driver can push HostsUpdated and Abort to it. Requests are signed with
// the job secret like the rendezvous server's and go through the same core
// (common::SignedHttpServer: deadlines, limits, replay guard, connection
// admission), so strangers who can reach the port cannot keep the driver's
// push out. A malformed request gets 400 and the server keeps serving. It
// outlives the worker's runtime resets: its address is registered with the
// driver at every check-in.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "hvd/common/http_message.h"
#include "hvd/common/status.h"
#include "hvd/notify/messages.h"

namespace hvd::common {
class SignedHttpServer;
}

namespace hvd::notify {

// Horovod's HostUpdateResult bits (horovod.runner.elastic.worker).
inline constexpr int kHostsRemoved = 1;
inline constexpr int kHostsAdded = 2;

class NotificationServer {
 public:
  // Called on a server thread for every accepted Abort.
  using AbortHandler = std::function<void(const Abort&)>;

  // Listens on `bind_host` (the worker's own address), ephemeral port.
  static common::Result<std::unique_ptr<NotificationServer>> Start(
      const std::string& bind_host, const std::string& secret,
      AbortHandler on_abort = nullptr);
  ~NotificationServer();
  NotificationServer(const NotificationServer&) = delete;
  NotificationServer& operator=(const NotificationServer&) = delete;

  // "<host>:<port>" for the driver.
  std::string address() const;
  // The highest HostsUpdated sequence received; 0 before the first.
  int64_t latest_sequence() const { return latest_sequence_; }
  // The newest generation a HostsUpdated announced; 0 before the first. A
  // worker already in that generation (or a later one) has nothing to do.
  int64_t latest_generation() const { return latest_generation_; }
  // What the HostsUpdated pushes that announced latest_generation() said
  // changed, in Horovod's HostUpdateResult bits (kHostsRemoved,
  // kHostsAdded); 0 before the first.
  int latest_changes() const;

 private:
  NotificationServer(std::string host, AbortHandler on_abort);
  // Runs on a handler thread for every authenticated request.
  common::HttpAnswer Route(const common::HttpRequest& req);

  const std::string host_;
  const AbortHandler on_abort_;
  std::unique_ptr<common::SignedHttpServer> http_;
  int port_ = 0;
  std::atomic<int64_t> latest_sequence_{0};
  std::atomic<int64_t> latest_generation_{0};
  mutable std::mutex changes_mu_;
  int64_t changes_generation_ = 0;  // guarded by changes_mu_
  int changes_ = 0;                 // guarded by changes_mu_
};

}  // namespace hvd::notify
