// HOROVOD_THREAD_AFFINITY: the background thread of local rank i onto the
// i-th core the variable names, as Horovod pins its own.
#pragma once

#include <thread>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"

namespace hvd::runtime {

// Nothing without the variable; kInvalidArgument, naming the variable and
// what to give, when it names too few cores or one this process may not
// run on.
common::Status PinToLocalRankCore(std::thread& thread,
                                  const RuntimeConfig& config);

}  // namespace hvd::runtime
