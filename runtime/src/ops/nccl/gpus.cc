#include "ops/nccl/gpus.h"

#include <string>
#include <utility>

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

Gpus::Gpus(Loader load) : load_(std::move(load)) {}

Result<std::shared_ptr<Api>> Gpus::For(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!api_ && !load_error_) {
    Result<std::unique_ptr<Api>> loaded = load_();
    Result<int> count =
        loaded.ok() ? (*loaded)->DeviceCount() : Result<int>(loaded.status());
    if (!count.ok()) {
      load_error_ = count.status().WithContext("a CUDA tensor");
    } else {
      api_ = std::move(*loaded);
      device_count_ = *count;
    }
  }
  if (load_error_) return *load_error_;
  if (device < 0 || device >= device_count_) {
    return Status::InvalidArgument(
        "a CUDA tensor on device " + std::to_string(device) +
        ", but this process sees " + std::to_string(device_count_) +
        " CUDA device(s) (CUDA_VISIBLE_DEVICES)");
  }
  return api_;
}

Result<std::shared_ptr<void>> Gpus::RecordReady(int device, Stream producer) {
  Result<std::shared_ptr<Api>> api = For(device);
  if (!api.ok()) return api.status();
  Result<Event> event = (*api)->CreateEvent(device);
  if (!event.ok()) return event.status();
  std::shared_ptr<void> ready(
      *event, [api = *api, device](void* e) { api->DestroyEvent(device, e); });
  Status status = (*api)->Record(*event, producer);
  if (!status.ok()) return status;
  return ready;
}

void Gpus::Park(int32_t set_id, Parked parked) {
  std::shared_ptr<Lane> replaced;  // aborted outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = parked_[set_id];
  replaced = std::move(slot.lane);
  slot = std::move(parked);
}

void Gpus::DropParked() {
  std::map<int32_t, Parked> dropped;  // aborted outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  dropped.swap(parked_);
}

std::optional<Gpus::Parked> Gpus::TakeParked(int32_t set_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = parked_.find(set_id);
  if (found == parked_.end()) return std::nullopt;
  Parked parked = std::move(found->second);
  parked_.erase(found);
  return parked;
}

}  // namespace hvd::runtime::nccl
