#include "background_loop.h"

#include <spdlog/spdlog.h>

#include <new>

#include "gloo_ops.h"

namespace hvd::runtime {

using common::Status;

BackgroundLoop::BackgroundLoop(const GlooContexts& contexts, TensorQueue* queue,
                               HandleTable* handles,
                               std::chrono::microseconds cycle_time)
    : contexts_(contexts),
      queue_(queue),
      handles_(handles),
      cycle_time_(cycle_time),
      negotiator_(contexts.global) {}

Status BackgroundLoop::Run() {
  Status stopped;
  try {
    stopped = Cycles();
  } catch (const std::bad_alloc&) {
    // An allgather output too big for this host, most likely.
    stopped = Status::ResourceExhausted("out of memory in a collective");
  } catch (const std::exception& e) {
    stopped = Status::Internal(e.what());
  }
  if (stopped.code() != common::Code::kAborted) {
    spdlog::error("background loop stopped: {}", stopped.ToString());
    stopped = stopped.WithContext(
        "hvd's background loop stopped; this and every later collective fail "
        "until hvd.shutdown() and hvd.init() (an elastic reset)");
  }
  if (failed_ != 0) handles_->Complete(failed_, OpResult{stopped, nullptr, {}});
  for (TensorEntry& entry : queue_->Close(stopped)) {
    handles_->Complete(entry.handle, OpResult{stopped, nullptr, {}});
  }
  return stopped;
}

Status BackgroundLoop::Cycles() {
  while (true) {
    queue_->WaitForWork(cycle_time_);
    auto responses = negotiator_.Exchange(queue_->PopRequests());
    if (!responses.ok()) return responses.status();
    for (const Response& response : responses->responses) {
      Status status = Execute(response);
      if (!status.ok()) return status;
    }
    if (responses->shutdown) {
      return Status::Aborted("hvd was shut down (hvd.shutdown() on some rank)");
    }
  }
}

Status BackgroundLoop::Execute(const Response& response) {
  auto entry = queue_->Take(response.name);
  if (!entry) {
    return Status::Internal("rank 0 answered '" + response.name +
                            "', which this rank never submitted");
  }
  if (response.kind == Response::Kind::kError) {
    spdlog::warn("{}", response.error_message);
    handles_->Complete(
        entry->handle,
        OpResult{
            Status(response.error_code, response.error_message), nullptr, {}});
    return Status::Ok();
  }
  OpResult result;
  switch (response.type) {
    case OpType::kAllreduce:
      result = RunAllreduce(contexts_.global, *entry);
      break;
    case OpType::kAllgather:
      result = RunAllgather(contexts_.global, *entry, response.first_dims);
      break;
    case OpType::kBroadcast:
      result = RunBroadcast(contexts_.global, *entry);
      break;
    case OpType::kBarrier:
      result = RunBarrier(contexts_.global);
      break;
  }
  if (!result.status.ok()) {
    // Failed with the loop's final status, like every pending entry.
    failed_ = entry->handle;
    return result.status;
  }
  handles_->Complete(entry->handle, std::move(result));
  return Status::Ok();
}

}  // namespace hvd::runtime
