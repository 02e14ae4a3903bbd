// DiscoveryLoop: runs the host discovery script every interval on its own
// thread (a slow script must not hold up signals or worker exits) and hands
// each good result to `on_hosts`. A failed run keeps the last good result
// and is logged. Destruction stops the thread at once, killing a script
// that is still running.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "job/launch_config.h"

namespace hvd::launcher {

class DiscoveryLoop {
 public:
  // `on_hosts` runs on the loop's thread.
  DiscoveryLoop(const LaunchConfig& config,
                std::function<void(std::vector<HostSlots>)> on_hosts);
  ~DiscoveryLoop();
  DiscoveryLoop(const DiscoveryLoop&) = delete;
  DiscoveryLoop& operator=(const DiscoveryLoop&) = delete;

 private:
  void Run();

  const LaunchConfig& config_;
  const std::function<void(std::vector<HostSlots>)> on_hosts_;
  const int cancel_fd_;  // readable once stopping: ends a running script
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hvd::launcher
