// Runtime: one worker's collective engine. Start() connects the Gloo
// contexts and starts the background thread; callers enqueue collectives and
// get handles; the background thread negotiates with rank 0, runs the
// collective and completes the handle. Destroying the Runtime (or Shutdown)
// stops the thread and releases every context, so a process can start a new
// Runtime afterwards (an elastic reset).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "hvd/runtime/types.h"

namespace hvd::runtime {

using Handle = int64_t;

// What a caller describes about one tensor. `data` is read (and for in-place
// ops written) by the background thread until the handle completes; the
// caller keeps it alive until then.
struct TensorSpec {
  // Unique among this rank's in-flight collectives; empty: a generated name
  // "<op>.noname.<n>", which requires the same call order on every rank.
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
};

struct AllreduceArgs {
  ReduceOp op = ReduceOp::kAverage;
  double prescale = 1.0;
  double postscale = 1.0;
};

// A completed handle's result. `data`/`shape` are set for allgather, whose
// output size is known only after negotiation.
struct OpResult {
  common::Status status;
  std::shared_ptr<std::vector<uint8_t>> data;
  std::vector<int64_t> shape;
};

class Runtime {
 public:
  // Connects generation `generation` of the job described by `config`.
  static common::Result<std::unique_ptr<Runtime>> Start(
      const RuntimeConfig& config, int64_t generation = 0);
  ~Runtime();  // Shutdown(), then frees everything.
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeConfig& config() const;

  // `input` and `output` hold the spec's shape; they may be the same buffer.
  common::Result<Handle> Allreduce(const TensorSpec& spec, const void* input,
                                   void* output, const AllreduceArgs& args);
  // Concatenates along dimension 0, which may differ between ranks.
  common::Result<Handle> Allgather(const TensorSpec& spec, const void* input);
  // In place: `buffer` is the input on `root` and the output elsewhere.
  common::Result<Handle> Broadcast(const TensorSpec& spec, void* buffer,
                                   int root);
  common::Result<Handle> Barrier();

  // True once the handle has completed (successfully or not).
  common::Result<bool> Poll(Handle handle);
  // Blocks until the handle completes; returns and forgets its result.
  common::Result<OpResult> Wait(Handle handle);

  // Cuts this rank's connections to the others (the driver saw a worker
  // die): a collective blocked on a hung peer fails at once with
  // kTransport instead of waiting out the Gloo timeout. Safe from any
  // thread, at any time; a no-op after Shutdown.
  void Abort(const std::string& reason);

  // Tells every rank to stop (through the next negotiation), joins the
  // background thread and fails what is still pending with kAborted.
  // Idempotent.
  void Shutdown();

  class Impl;

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::runtime
