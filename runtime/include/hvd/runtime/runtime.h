// Runtime: one worker's collective engine. Start() connects the Gloo
// contexts and starts the background thread; callers enqueue collectives and
// get handles; the background thread negotiates with rank 0, runs the
// collective and completes the handle. Destroying the Runtime (or Shutdown)
// stops the thread and releases every context, so a process can start a new
// Runtime afterwards (an elastic reset).
//
// Thread safety: every method may be called from any thread.
//
// Fork: a process forked from the one that started the Runtime has a copy of
// it without its threads. There every call that would enqueue, wait or touch
// shared state fails at once with kInvalidArgument (OwnerProcess::Check's
// message), Shutdown and Abort do nothing, and destroying it frees nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "hvd/runtime/types.h"  // Handle, TensorSpec, OpResult, ...
#include "hvd/runtime/worker_stats.h"

namespace hvd::runtime {

namespace nccl {
class Gpus;
}

class Runtime {
 public:
  // Connects generation `generation` of the job described by `config`,
  // with `process_sets` (global ranks each) as sets 1, 2, ... in order.
  // Every collective this rank completes, and every stall warning, is
  // counted in `stats` (may be null), which the runtime keeps alive. With
  // `membership` (elastic mode), rank 0 marks the generation's start on the
  // timeline ("generation 3: 4 ranks", Timeline::MarkGeneration) whenever
  // this runtime opens it. CUDA tensors run on `gpus` (null: this
  // process's own; tests pass fake ones, runtime/src/ops/nccl/gpus.h).
  static common::Result<std::unique_ptr<Runtime>> Start(
      const RuntimeConfig& config, int64_t generation = 0,
      const std::vector<std::vector<int>>& process_sets = {},
      std::shared_ptr<WorkerStats> stats = nullptr,
      std::optional<GenerationInfo> membership = std::nullopt,
      std::shared_ptr<nccl::Gpus> gpus = nullptr);
  ~Runtime();  // Shutdown(), then frees everything.
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeConfig& config() const;

  // `input` and `output` hold the spec's shape; they may be the same buffer.
  common::Result<Handle> Allreduce(const TensorSpec& spec, const void* input,
                                   void* output, const AllreduceArgs& args);
  // Concatenates along dimension 0, which may differ between ranks.
  common::Result<Handle> Allgather(const TensorSpec& spec, const void* input);
  // In place: `buffer` is the input on `root` (a global rank in the spec's
  // set) and the output elsewhere.
  common::Result<Handle> Broadcast(const TensorSpec& spec, void* buffer,
                                   int root);
  // Sends splits[r] rows of dimension 0 to the set's rank r (empty: equal
  // parts); the result holds the rows received, by sender, and their counts.
  common::Result<Handle> Alltoall(const TensorSpec& spec, const void* input,
                                  std::vector<int64_t> splits);
  // Reduces across the set and keeps this rank's block of dimension 0 (see
  // ReducescatterRows); Sum or Average.
  common::Result<Handle> Reducescatter(const TensorSpec& spec,
                                       const void* input,
                                       const AllreduceArgs& args);
  // Grouped ops: the tensors are negotiated together and run as one fused
  // unit (HOROVOD_DISABLE_GROUP_FUSION keeps other tensors out of it).
  // Specs must share a process set. One handle per tensor.
  common::Result<std::vector<Handle>> GroupedAllreduce(
      const std::vector<TensorSpec>& specs,
      const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
      const AllreduceArgs& args);
  common::Result<std::vector<Handle>> GroupedAllgather(
      const std::vector<TensorSpec>& specs,
      const std::vector<const void*>& inputs);
  common::Result<std::vector<Handle>> GroupedReducescatter(
      const std::vector<TensorSpec>& specs,
      const std::vector<const void*>& inputs, const AllreduceArgs& args);
  common::Result<Handle> Barrier(int32_t process_set = 0);
  // This rank has no more data: until every rank of the set has joined, it
  // takes part in the others' allreduces (with zeros) and barriers; their
  // other collectives fail, as in Horovod. The result names the last rank
  // to join.
  common::Result<Handle> Join(int32_t process_set = 0);

  // Dynamic process sets (HOROVOD_DYNAMIC_PROCESS_SETS=1): every rank calls
  // these in the same order. Adding returns the new id in the result.
  common::Result<Handle> AddProcessSet(std::vector<int> ranks);
  common::Result<Handle> RemoveProcessSet(int32_t id);
  // Rank 0 records a Chrome-trace timeline into `path` (appending to one
  // it wrote before) until StopTimeline() or Shutdown(); other ranks do
  // nothing.
  common::Status StartTimeline(const std::string& path, bool mark_cycles);
  void StopTimeline();

  // Every process set now: id -> global ranks (none in a fork).
  std::map<int32_t, std::vector<int>> ProcessSets() const;
  // kInvalidArgument unless this rank is in the set.
  common::Result<NegotiationStats> Stats(int32_t process_set = 0) const;

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
  // The background loop has ended (some rank's Shutdown, an error): every
  // collective fails at once from now on.
  bool Stopped() const;

  // Ok in the process that started this runtime; in a fork of it, the
  // kInvalidArgument every call there fails with.
  common::Status CheckProcess() const;

  class Impl;

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::runtime
