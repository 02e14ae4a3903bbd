#include "engine/thread_affinity.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hvd/common/env_vars.h"

namespace hvd::runtime {

using common::Status;

Status PinToLocalRankCore(std::thread& thread, const RuntimeConfig& config) {
  const auto& cores = config.thread_affinity;
  if (cores.empty()) return Status::Ok();
  const char* name = common::env_vars::kThreadAffinity;
  const common::RankLayout& layout = config.layout;
  if (layout.local_rank >= static_cast<int>(cores.size())) {
    return Status::InvalidArgument(
        std::string(name) + " names " + std::to_string(cores.size()) +
        " core(s), but this worker is local rank " +
        std::to_string(layout.local_rank) + " of " +
        std::to_string(layout.local_size) + ": give one core per local rank");
  }
  const int core = cores[layout.local_rank];
  cpu_set_t set;
  CPU_ZERO(&set);
  if (core < CPU_SETSIZE) CPU_SET(core, &set);
  int error =
      core < CPU_SETSIZE
          ? pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set)
          : EINVAL;
  if (error != 0) {
    return Status::InvalidArgument(
        std::string(name) +
        ": cannot pin the background thread of local rank " +
        std::to_string(layout.local_rank) + " to core " + std::to_string(core) +
        " (" + std::strerror(error) +
        "); name a core this process may run on (see nproc / taskset)");
  }
  spdlog::debug("background thread pinned to core {}", core);
  return Status::Ok();
}

}  // namespace hvd::runtime
