// TensorEntry: one collective's tensor as the executors see it, from the
// caller's enqueue (runtime.cc) through its set's queue (engine/) to the
// executor that runs it (ops/).
#pragma once

#include <memory>

#include "hvd/runtime/types.h"
#include "negotiation/message.h"

namespace hvd::runtime {

struct TensorEntry {
  Request request;
  Handle handle = 0;
  const void* input = nullptr;
  void* output = nullptr;  // allreduce output; broadcast buffer
  // A CUDA tensor's: its producer's stream (TensorSpec::stream), and the
  // event recorded there when it was enqueued (an nccl::Event, destroyed
  // with the last copy of the entry), which hvd's stream waits for.
  void* stream = nullptr;
  std::shared_ptr<void> ready;
};

}  // namespace hvd::runtime
