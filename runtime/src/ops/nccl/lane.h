// What one process set's collectives on CUDA tensors use on this rank: the
// set's NCCL communicator, hvd's own stream on the rank's device, the
// fusion buffer there, and the event by which the host learns that the
// stream has finished. Inputs are waited for on the device (the producer's
// ready event), never by the host; the host waits once per unit, at the
// end, under the communicator's watchdog.
//
// Thread safety: the background loop's, like the communicator's, except
// communicator().RequestAbort().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "ops/nccl/communicator.h"
#include "ops/nccl/nccl_api.h"
#include "ops/tensor_entry.h"
#include "transport/abortable_context.h"

namespace hvd::runtime::nccl {

// The communicators of a hierarchical allreduce on this rank, besides the
// set's own: among the set's ranks on this host (local), and among the
// ranks of every host with this rank's local rank (cross).
struct Hierarchy {
  std::unique_ptr<Communicator> local;
  std::unique_ptr<Communicator> cross;
};

class Lane {
 public:
  // Makes the stream and the event on the communicator's device. When
  // `abort_switch` (may be null) trips, as on the driver's Abort push or a
  // Gloo failure of this generation, the communicator's wait ends.
  static common::Result<std::unique_ptr<Lane>> Create(
      std::shared_ptr<Api> api, std::unique_ptr<Communicator> communicator,
      std::shared_ptr<AbortSwitch> abort_switch = nullptr);
  // Aborts the communicators unless Close() closed them: after a failure
  // their peers may never take part in a clean close.
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  Api& api() { return *api_; }
  Communicator& communicator() { return *communicator_; }
  Stream stream() const { return stream_; }
  int device() const { return communicator_->device(); }

  // Device memory for a result the caller keeps (an allgather's); it
  // keeps the seam alive, so it may outlive the lane and the runtime.
  common::Result<DeviceBytes> AllocateResult(size_t bytes);
  // The device buffer, at least `bytes` long; grown, never shrunk.
  common::Result<uint8_t*> FusionBuffer(size_t bytes);
  // hvd's stream waits for each entry's ready event (TensorEntry::ready).
  common::Status WaitForInputs(const std::vector<const TensorEntry*>& entries);
  // Copies on hvd's stream.
  common::Status Copy(void* to, const void* from, size_t bytes);
  // Waits on the host until all work given to hvd's stream has finished,
  // under `watch`'s watchdog (the set's communicator when null).
  common::Status Finish(const std::string& what, Communicator* watch = nullptr);
  // A clean close, at an orderly shutdown (every member calls it).
  common::Status Close();
  // No abort switch reaches the communicator any more (its generation is
  // over; the lane waits for the next one, gpus.h); the hierarchy's are
  // aborted (the next generation makes its own).
  void Detach();
  // `abort_switch` (may be null) reaches the communicator from now on: the
  // lane serves a new generation.
  void Attach(std::shared_ptr<AbortSwitch> abort_switch);

  // The hierarchical allreduce's communicators once SetHierarchy has
  // given them (every member at once); null before. The abort switch
  // reaches them too.
  Hierarchy* hierarchy() { return hierarchy_.local ? &hierarchy_ : nullptr; }
  void SetHierarchy(Hierarchy hierarchy);

 private:
  Lane(std::shared_ptr<Api> api, std::unique_ptr<Communicator> communicator,
       Stream stream, Event done);
  // The abort switch asks `comm` to abort, until Detach.
  void Subscribe(Communicator* comm);

  const std::shared_ptr<Api> api_;
  std::unique_ptr<Communicator> communicator_;
  const Stream stream_;
  const Event done_;
  std::shared_ptr<AbortSwitch> abort_switch_;
  std::vector<int> subscriptions_;
  Hierarchy hierarchy_;
  void* buffer_ = nullptr;
  size_t buffer_bytes_ = 0;
};

}  // namespace hvd::runtime::nccl
