// The background thread's cycle: wait briefly for work; then, for the
// global process set first and every other set this rank belongs to in id
// order, turn the set's new requests into the responses its coordinator
// (or its response cache) says to run, run them in that order with fusion,
// and complete the handles. It stops on shutdown (agreed on the global set,
// so every rank stops in the same cycle) or at the first transport error,
// failing everything pending with that status.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <gloo/transport/device.h>

#include "engine/fusion_plan.h"
#include "engine/handle_table.h"
#include "engine/process_set.h"
#include "engine/tensor_queue.h"
#include "hvd/runtime/config.h"
#include "hvd/runtime/worker_stats.h"
#include "ops/executor.h"
#include "ops/nccl/gpus.h"
#include "transport/socket_watch.h"
#include "tuning/parameter_manager.h"
#include "tuning/timeline.h"

namespace hvd::runtime {

struct LoopOptions {
  std::chrono::microseconds cycle_time{1000};
  // A burst of enqueues ends after this long without one (see WorkSignal).
  std::chrono::microseconds burst_quiet{100};
  FusionOptions fusion;
  ControllerOptions controller;
};

// What the loop works with; the Runtime owns all of it.
struct LoopParts {
  const RuntimeConfig* config = nullptr;
  int64_t generation = 0;
  std::shared_ptr<gloo::transport::Device> device;  // for added sets
  std::shared_ptr<AbortSwitch> abort_switch;        // ... and their waits
  ProcessSetTable* sets = nullptr;
  HandleTable* handles = nullptr;
  WorkSignal* signal = nullptr;
  SocketRegistry* sockets = nullptr;
  TimelineSlot* timeline = nullptr;
  // Rank 0 with autotune on; null elsewhere.
  std::unique_ptr<ParameterManager> tuner;
  // Counts this rank's completed collectives; may be null.
  WorkerStats* stats = nullptr;
  // The GPUs CUDA tensors were enqueued on.
  nccl::Gpus* gpus = nullptr;
};

class BackgroundLoop {
 public:
  BackgroundLoop(LoopParts parts, LoopOptions options);

  // Runs cycles until shutdown or the first error; returns why it stopped.
  common::Status Run();

 private:
  // The cycles until shutdown or the first error.
  common::Status Cycles();
  // One cycle of one set; `stop` is set when the set agreed to shut down.
  common::Status SetCycle(ProcessSet& set, bool shutdown, bool* stop);
  // Runs one cycle's responses; a non-ok status stops the loop.
  common::Status ExecuteAll(ProcessSet& set,
                            const std::vector<Response>& responses);
  common::Status ExecuteOne(const Backends& backends, const Response& response,
                            const TensorEntry& entry);
  // What `set`'s collectives run on; for CUDA tensors (`device` >= 0) its
  // lane, made at the first (every member gets there in the same
  // response; ops/nccl/lane_setup.h). With `allreduce` (the unit's op),
  // the lane's hierarchy when the set's allreduce is hierarchical now,
  // made at the first such unit.
  common::Result<Backends> BackendsOf(ProcessSet& set, int device,
                                      bool allreduce);
  // Every rank: adopts rank 0's tuning for this and every other set.
  void Apply(const Tuning& tuning);
  // Add or remove a process set (on the global set only).
  common::Status ChangeSets(const Response& response, const TensorEntry& entry);
  // `entry`, this rank's own, completed successfully: counted for the
  // worker's reports, before its handle completes (so a caller that waited
  // on it sees it counted).
  void Count(const TensorEntry& entry);

  LoopParts parts_;
  LoopOptions options_;
  // This cycle's timeline (rank 0, while one is on), and the rows whose
  // negotiation it has begun.
  std::shared_ptr<Timeline> timeline_;
  std::unordered_set<std::string> negotiating_;
  // Bytes this cycle's collectives moved (autotune's measure).
  int64_t cycle_bytes_ = 0;
  // The last refusal logged: one message that fails several names (a
  // deadlock ends every pending one) is logged once, not once a name.
  std::string logged_refusal_;
  // The fusion buffer of the one device the Gloo ops use (host memory),
  // reused across cycles and sets.
  std::vector<uint8_t> fusion_buffer_;
  // Taken entries the loop's final status fails: the one whose collective
  // stopped the loop and those of its cycle that had not run yet.
  std::vector<Handle> failed_;
};

}  // namespace hvd::runtime
