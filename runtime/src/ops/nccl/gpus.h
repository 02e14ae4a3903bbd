// This process's GPUs as hvd uses them: the seam over NCCL and the CUDA
// runtime, loaded when the first CUDA tensor arrives (so a worker that has
// none never maps the CUDA libraries), the ready events of the tensors
// enqueued on them, and the lane a generation of an elastic job leaves for
// the next. One Gpus serves every generation of an elastic worker.
//
// Thread safety: any thread (the callers of collectives and the background
// loop).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "hvd/common/status.h"
#include "ops/nccl/lane.h"
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

class Gpus {
 public:
  using Loader = std::function<common::Result<std::unique_ptr<Api>>()>;
  // `load` makes the seam once, when first needed: SystemApi, or a fake.
  explicit Gpus(Loader load = SystemApi);

  // The seam, if `device` is a CUDA device this process can use; else
  // why not (no NCCL in this build, no driver or device, an ordinal out of
  // range), the same answer every time. Shared: device memory handed to
  // the user (an allgather's result) may outlive the runtime and this.
  common::Result<std::shared_ptr<Api>> For(int device);

  // Records an event on `producer` (a stream of `device`) that hvd's
  // stream will wait for; destroying the last copy of the result destroys
  // the event.
  common::Result<std::shared_ptr<void>> RecordReady(int device,
                                                    Stream producer);

  // A process set's lane whose generation ended, with its communicator
  // (never aborted), left for the set's next generation to keep, shrink or
  // abort; it replaces (aborts) one parked before. `failed`: the
  // generation failed here. Its abort switch was the old generation's: the
  // caller detaches it first.
  struct Parked {
    int64_t generation = 0;
    bool failed = false;
    std::shared_ptr<Lane> lane;
  };
  void Park(int32_t set_id, Parked parked);
  // The lane parked for `set_id`, if any; the caller owns it now.
  std::optional<Parked> TakeParked(int32_t set_id);
  // Aborts every parked lane: the job is over for this process.
  void DropParked();

 private:
  std::mutex mu_;
  Loader load_;
  std::optional<common::Status> load_error_;  // guarded by mu_
  std::shared_ptr<Api> api_;                  // set once, under mu_
  int device_count_ = 0;                      // guarded by mu_
  std::map<int32_t, Parked> parked_;          // guarded by mu_
};

}  // namespace hvd::runtime::nccl
