// The tensor queue of one process set, between the threads that call
// collectives and the background thread: Add() records collectives under
// their names; each cycle the background thread pops the new requests to
// negotiate, and takes the entries back by name when the set's coordinator
// says to run them. Once closed (shutdown, a transport error, the set
// removed), it refuses new work with the closing status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hvd/runtime/types.h"
#include "negotiation/message.h"
#include "ops/tensor_entry.h"

namespace hvd::runtime {

// Wakes the background thread when any queue gets work, or on shutdown.
class WorkSignal {
 public:
  void Notify();
  // Waits up to `timeout` for a Notify() since the last wait, or shutdown;
  // after a Notify(), keeps waiting while more arrive less than `quiet`
  // apart (still within `timeout`), so that a burst of enqueues, such as a
  // backward pass's gradients, is negotiated in one cycle.
  void WaitFor(std::chrono::microseconds timeout,
               std::chrono::microseconds quiet);
  void RequestShutdown();
  bool shutdown_requested();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
  uint64_t notified_ = 0;
  bool shutdown_ = false;
};

class TensorQueue {
 public:
  explicit TensorQueue(WorkSignal* signal) : signal_(signal) {}

  // Adds entries at once (a grouped op's tensors are negotiated in the same
  // cycle). Refuses a name already in flight (kInvalidArgument) and, once
  // closed, everything (with the closing status); then adds none.
  common::Status Add(std::vector<TensorEntry> entries);

  // The requests added since the last call, in the order they were added.
  std::vector<Request> PopRequests();

  std::optional<TensorEntry> Take(const std::string& name);
  bool Has(const std::string& name);

  // Refuses all later work with `status` and returns what was in flight.
  std::vector<TensorEntry> Close(const common::Status& status);

 private:
  WorkSignal* signal_;
  std::mutex mu_;
  std::unordered_map<std::string, TensorEntry> entries_;
  std::vector<Request> new_requests_;
  common::Status closed_;
  bool is_closed_ = false;
};

}  // namespace hvd::runtime
