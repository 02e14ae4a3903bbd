#include "ops/nccl/lane.h"

#include <utility>

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

Lane::Lane(std::shared_ptr<Api> api, std::unique_ptr<Communicator> communicator,
           Stream stream, Event done)
    : api_(std::move(api)),
      communicator_(std::move(communicator)),
      stream_(stream),
      done_(done) {}

Result<std::unique_ptr<Lane>> Lane::Create(
    std::shared_ptr<Api> api, std::unique_ptr<Communicator> communicator,
    std::shared_ptr<AbortSwitch> abort_switch) {
  const int device = communicator->device();
  Result<Stream> stream = api->CreateStream(device);
  if (!stream.ok()) return stream.status();
  Result<Event> done = api->CreateEvent(device);
  if (!done.ok()) {
    api->DestroyStream(device, *stream);
    return done.status();
  }
  std::unique_ptr<Lane> lane(
      new Lane(std::move(api), std::move(communicator), *stream, *done));
  lane->Attach(std::move(abort_switch));
  return lane;
}

void Lane::Subscribe(Communicator* comm) {
  if (!abort_switch_) return;
  subscriptions_.push_back(abort_switch_->Subscribe([comm] {
    comm->RequestAbort("this generation's collectives were aborted");
  }));
}

void Lane::Attach(std::shared_ptr<AbortSwitch> abort_switch) {
  abort_switch_ = std::move(abort_switch);
  Subscribe(communicator_.get());
}

void Lane::SetHierarchy(Hierarchy hierarchy) {
  hierarchy_ = std::move(hierarchy);
  Subscribe(hierarchy_.local.get());
  Subscribe(hierarchy_.cross.get());
}

void Lane::Detach() {
  if (abort_switch_) {
    for (int subscription : subscriptions_) {
      abort_switch_->Unsubscribe(subscription);
    }
  }
  subscriptions_.clear();
  abort_switch_.reset();
  // Aborted, not closed: after a failure their peers may never finalize.
  for (Communicator* comm : {hierarchy_.local.get(), hierarchy_.cross.get()}) {
    if (comm != nullptr) comm->Abort();
  }
  hierarchy_ = {};
}

Status Lane::Close() {
  Status status = communicator_->Close();
  for (Communicator* comm : {hierarchy_.local.get(), hierarchy_.cross.get()}) {
    if (comm == nullptr) continue;
    Status closed = comm->Close();
    if (status.ok()) status = closed;
  }
  return status;
}

Lane::~Lane() {
  // The communicators go first: an abort ends what the stream still runs.
  const int device = this->device();
  Detach();
  communicator_->Abort();
  communicator_.reset();
  if (buffer_ != nullptr) api_->Free(device, buffer_);
  api_->DestroyEvent(device, done_);
  api_->DestroyStream(device, stream_);
}

Result<DeviceBytes> Lane::AllocateResult(size_t bytes) {
  // At least a byte: cudaMalloc(0) gives no pointer to hand out.
  Result<void*> memory = api_->Allocate(device(), bytes > 0 ? bytes : 1);
  if (!memory.ok()) return memory.status();
  DeviceBytes result;
  result.memory = std::shared_ptr<void>(
      *memory,
      [api = api_, device = device()](void* m) { api->Free(device, m); });
  result.bytes = bytes;
  result.device = device();
  return result;
}

Result<uint8_t*> Lane::FusionBuffer(size_t bytes) {
  if (bytes > buffer_bytes_) {
    // Nothing on the stream may still use the old buffer.
    Status status = Finish("growing the fusion buffer");
    if (!status.ok()) return status;
    Result<void*> grown = api_->Allocate(device(), bytes);
    if (!grown.ok()) return grown.status();
    if (buffer_ != nullptr) api_->Free(device(), buffer_);
    buffer_ = *grown;
    buffer_bytes_ = bytes;
  }
  return static_cast<uint8_t*>(buffer_);
}

Status Lane::WaitForInputs(const std::vector<const TensorEntry*>& entries) {
  for (const TensorEntry* entry : entries) {
    if (entry->ready == nullptr) continue;
    Status status = api_->WaitFor(stream_, entry->ready.get());
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

Status Lane::Copy(void* to, const void* from, size_t bytes) {
  if (bytes == 0 || to == from) return Status::Ok();
  return api_->Copy(to, from, bytes, stream_);
}

Status Lane::Finish(const std::string& what, Communicator* watch) {
  Status status = api_->Record(done_, stream_);
  if (!status.ok()) return status;
  return (watch != nullptr ? watch : communicator_.get())
      ->AwaitDone(done_, what);
}

}  // namespace hvd::runtime::nccl
