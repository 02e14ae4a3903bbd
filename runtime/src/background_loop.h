// The background thread's cycle: wait briefly for work, negotiate this
// rank's new requests with rank 0, run what rank 0 says in the order it
// says, complete the handles. It stops on shutdown (agreed through the
// negotiation, so every rank stops in the same cycle) or at the first
// transport error, failing everything pending with that status.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "gloo_contexts.h"
#include "handle_table.h"
#include "negotiator.h"
#include "tensor_queue.h"

namespace hvd::runtime {

class BackgroundLoop {
 public:
  BackgroundLoop(const GlooContexts& contexts, TensorQueue* queue,
                 HandleTable* handles, std::chrono::microseconds cycle_time,
                 int64_t fusion_threshold);

  // Runs cycles until shutdown or the first error; returns why it stopped.
  common::Status Run();

 private:
  // The cycles until shutdown or the first error.
  common::Status Cycles();
  // Runs one cycle's responses; a non-ok status stops the loop.
  common::Status ExecuteAll(const std::vector<Response>& responses);
  common::Status Execute(const Response& response, const TensorEntry& entry);

  const GlooContexts& contexts_;
  TensorQueue* queue_;
  HandleTable* handles_;
  std::chrono::microseconds cycle_time_;
  size_t fusion_threshold_;
  std::vector<uint8_t> fusion_buffer_;
  Negotiator negotiator_;
  // Taken entries the loop's final status fails: the one whose collective
  // stopped the loop and those of its cycle that had not run yet.
  std::vector<Handle> failed_;
};

}  // namespace hvd::runtime
