// GPUs and NCCL faked for the data path's tests (nccl_api.h), so the NCCL
// executors run on machines without a GPU: the ranks are threads of one
// process, each sees two devices, device memory is host memory, a stream is a
// queue of work run in order whenever a rank asks about it, and a collective
// completes when the last member of its communicator reaches it in its stream,
// which then writes every member's result. A rank that never launches its part
// is a hung or dead peer; its communicator's watchdog must end the others'
// wait.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

class FakeGpus {
 public:
  FakeGpus();
  FakeGpus(const FakeGpus&) = delete;
  FakeGpus& operator=(const FakeGpus&) = delete;
  ~FakeGpus();

  // The seam as one rank (thread) sees it; owned by this object.
  Api* Rank(int rank);
  // Makes another seam of `rank`, owned by whoever loads it: what a
  // Runtime's nccl::Gpus is given (gpus.h).
  std::function<common::Result<std::unique_ptr<Api>>()> Loader(int rank);

  // Device buffers not yet freed, and streams and events not destroyed.
  int live_allocations();
  int live_streams_and_events();
  // Collectives and copies launched by `rank`, and its communicators'
  // ends, in order ("allreduce 6 float32 sum*0.25", "copy 24", "broadcast 4
  // int32 root 1", "finalize", "destroy", "abort", "shrink -2 abort").
  std::vector<std::string> launches(int rank);

  // Communicators `rank` has made with ncclCommInitRankConfig (a shrink
  // makes one without).
  int inits(int rank);

  // Stops `stream` at this point of its work until Release(hold), as a
  // long kernel of the tensor's producer would.
  int Hold(Stream stream);
  void Release(int hold);

  // From now on ncclCommGetAsyncError reports `error` on every
  // communicator of `rank`, as NCCL does once a peer's connection breaks.
  void FailRank(int rank, common::Status error);

 private:
  friend class FakeRank;
  struct FakeComm;
  struct FakeStream;
  struct FakeEvent;
  struct Collective;

  // What NCCL computes for every member once all have arrived.
  static void Compute(const Collective& c);
  // Writes to `out` the reduction of `count` elements at element `offset`
  // of every member's input.
  static void ReduceInto(const Collective& c, size_t offset, size_t count,
                         uint8_t* out);
  // Runs the work at the front of every stream of `rank` until none can
  // run. Holds mu_.
  void ProgressLocked(int rank);

  std::mutex mu_;
  std::map<int, std::unique_ptr<Api>> ranks_;
  std::map<void*, std::unique_ptr<uint8_t[]>> memory_;
  std::set<FakeStream*> streams_;
  std::set<FakeEvent*> events_;
  std::vector<std::unique_ptr<FakeComm>> comms_;
  // Collectives by communicator id and sequence number.
  std::map<std::pair<std::string, int>, std::shared_ptr<Collective>> pending_;
  // Sent, not yet received: by communicator, sender, receiver and the
  // pair's sequence number.
  std::map<std::tuple<std::string, int, int, int>, std::vector<uint8_t>> mail_;
  std::map<int, std::vector<std::string>> launches_;
  std::map<int, int> inits_;
  std::map<int, common::Status> failed_;
  std::map<int, std::unique_ptr<FakeStream>> default_streams_;
  std::map<int, bool> released_;
  int next_id_ = 0;
};

}  // namespace hvd::runtime::nccl
