#include "background_loop.h"

#include <spdlog/spdlog.h>

#include <new>

#include "gloo_ops.h"

namespace hvd::runtime {

using common::Status;

namespace {

size_t Bytes(const Request& r) {
  return ElementCount(r.shape) * DataTypeSize(r.dtype);
}

}  // namespace

BackgroundLoop::BackgroundLoop(const GlooContexts& contexts, TensorQueue* queue,
                               HandleTable* handles,
                               std::chrono::microseconds cycle_time,
                               int64_t fusion_threshold)
    : contexts_(contexts),
      queue_(queue),
      handles_(handles),
      cycle_time_(cycle_time),
      fusion_threshold_(static_cast<size_t>(fusion_threshold)),
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
  for (Handle handle : failed_) {
    handles_->Complete(handle, OpResult{stopped, nullptr, {}});
  }
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
    Status status = ExecuteAll(responses->responses);
    if (!status.ok()) return status;
    if (responses->shutdown) {
      return Status::Aborted("hvd was shut down (hvd.shutdown() on some rank)");
    }
  }
}

// Runs the responses in rank 0's order. Consecutive allreduces that can be
// fused, up to the threshold, run as one; every rank groups them the same
// way because it sees the same responses and the same (agreed) requests.
Status BackgroundLoop::ExecuteAll(const std::vector<Response>& responses) {
  std::vector<TensorEntry> entries;
  for (const Response& response : responses) {
    auto entry = queue_->Take(response.name);
    if (!entry) {
      return Status::Internal("rank 0 answered '" + response.name +
                              "', which this rank never submitted");
    }
    entries.push_back(std::move(*entry));
  }
  for (size_t i = 0; i < responses.size();) {
    size_t end = i + 1;
    if (responses[i].kind == Response::Kind::kRun &&
        responses[i].type == OpType::kAllreduce) {
      size_t bytes = Bytes(entries[i].request);
      while (end < responses.size() &&
             responses[end].kind == Response::Kind::kRun &&
             CanFuse(entries[i].request, entries[end].request) &&
             bytes + Bytes(entries[end].request) <= fusion_threshold_) {
        bytes += Bytes(entries[end].request);
        ++end;
      }
    }
    Status status;
    if (end - i > 1) {
      std::vector<TensorEntry> group(entries.begin() + i,
                                     entries.begin() + end);
      status = RunFusedAllreduce(contexts_.global, group, &fusion_buffer_);
      for (TensorEntry& entry : group) {
        if (status.ok())
          handles_->Complete(entry.handle, OpResult{});
        else
          failed_.push_back(entry.handle);
      }
    } else {
      status = Execute(responses[i], entries[i]);
    }
    if (!status.ok()) {
      // Fail everything this cycle has not run yet with the loop's status.
      for (size_t k = end; k < entries.size(); ++k) {
        failed_.push_back(entries[k].handle);
      }
      return status;
    }
    i = end;
  }
  return Status::Ok();
}

Status BackgroundLoop::Execute(const Response& response,
                               const TensorEntry& entry) {
  if (response.kind == Response::Kind::kError) {
    spdlog::warn("{}", response.error_message);
    handles_->Complete(
        entry.handle,
        OpResult{
            Status(response.error_code, response.error_message), nullptr, {}});
    return Status::Ok();
  }
  OpResult result;
  switch (response.type) {
    case OpType::kAllreduce:
      result = RunAllreduce(contexts_.global, entry);
      break;
    case OpType::kAllgather:
      result = RunAllgather(contexts_.global, entry, response.first_dims);
      break;
    case OpType::kBroadcast:
      result = RunBroadcast(contexts_.global, entry);
      break;
    case OpType::kBarrier:
      result = RunBarrier(contexts_.global);
      break;
  }
  if (!result.status.ok()) {
    failed_.push_back(entry.handle);
    return result.status;
  }
  handles_->Complete(entry.handle, std::move(result));
  return Status::Ok();
}

}  // namespace hvd::runtime
