#include "driver/discovery_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "driver/discovery.h"
#include "driver/errands.h"

namespace hvd::launcher {

DiscoveryLoop::DiscoveryLoop(
    const LaunchConfig& config,
    std::function<void(std::vector<HostSlots>)> on_hosts)
    : config_(config),
      on_hosts_(std::move(on_hosts)),
      cancel_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { Run(); });
}

DiscoveryLoop::~DiscoveryLoop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stopped_.notify_all();
  uint64_t one = 1;
  ssize_t ignored = write(cancel_fd_, &one, sizeof(one));
  (void)ignored;
  thread_.join();
  close(cancel_fd_);
}

void DiscoveryLoop::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (stopped_.wait_for(lock, config_.discovery_interval,
                          [&] { return stop_; })) {
      return;
    }
    lock.unlock();
    // A run that throws (the script's bytes, an allocation) is a failed
    // run, not the end of hvdrun.
    common::Status ran = RunCatching("host discovery", [this] {
      auto hosts =
          RunDiscovery(config_.discovery_script, config_.slots_per_host,
                       config_.discovery_timeout, cancel_fd_);
      if (hosts.ok()) {
        on_hosts_(std::move(*hosts));
      } else if (hosts.status().code() != common::Code::kAborted) {
        spdlog::error("hvdrun: {}; keeping the last known hosts",
                      hosts.status().message());
      }
    });
    if (!ran.ok()) {
      spdlog::error("hvdrun: {}; keeping the last known hosts", ran.message());
    }
    lock.lock();
  }
}

}  // namespace hvd::launcher
