// The tensor queue between the threads that call collectives and the
// background thread: Add() records a collective under its name; each cycle
// the background thread pops the new requests to negotiate, and takes the
// entries back by name when rank 0 says to run them. Once closed (shutdown
// or a transport error), it refuses new work with the closing status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hvd/runtime/runtime.h"
#include "message.h"

namespace hvd::runtime {

struct TensorEntry {
  Request request;
  Handle handle = 0;
  const void* input = nullptr;
  void* output = nullptr;  // allreduce output; broadcast buffer
};

class TensorQueue {
 public:
  // Refuses a name already in flight (kInvalidArgument) and, once closed,
  // everything (with the closing status).
  common::Status Add(TensorEntry entry);

  // Waits up to `timeout` for new requests or a shutdown request.
  void WaitForWork(std::chrono::microseconds timeout);

  // The requests added since the last call, in the order they were added.
  RequestList PopRequests();
  void RequestShutdown();

  std::optional<TensorEntry> Take(const std::string& name);

  // Refuses all later work with `status` and returns what was in flight.
  std::vector<TensorEntry> Close(const common::Status& status);

 private:
  std::mutex mu_;
  std::condition_variable work_;
  std::unordered_map<std::string, TensorEntry> entries_;
  std::vector<Request> new_requests_;
  bool shutdown_requested_ = false;
  common::Status closed_;
  bool is_closed_ = false;
};

}  // namespace hvd::runtime
