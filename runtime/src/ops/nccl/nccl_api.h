// The seam between hvd and NCCL (with the CUDA runtime calls NCCL's
// communicators need): the only place either is called, so the life-cycle
// of communicators (communicator.h) runs in tests over a fake that injects
// faults, on machines without a GPU, as LevelDB's Env stands between it and
// the OS.
//
// Every communicator is non-blocking (ncclCommInitRankConfig with
// blocking = 0): calls return at once and State() tells when NCCL has
// finished or failed, so no NCCL call can hold a thread past hvd's
// deadlines. Errors are status values naming the NCCL or CUDA call and its
// error string; none is thrown.
//
// Thread safety: an Api may be called from any thread; a communicator from
// one thread at a time, except Abort(), which NCCL allows at any time.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"

namespace hvd::runtime::nccl {

// ncclUniqueId's bytes (NCCL_UNIQUE_ID_BYTES): what rank 0 of a
// communicator makes and every member passes to InitRank.
struct UniqueId {
  std::array<char, 128> bytes{};
};

// An ncclComm_t as the seam hands it out; null is no communicator.
using Comm = void*;

// A cudaStream_t and a cudaEvent_t as the seam hands them out. Torch's
// streams come in as a Stream too (torch.cuda.Stream.cuda_stream).
using Stream = void*;
using Event = void*;

// A reduction as NCCL runs it: `op` is kSum, kAverage, kMin, kMax or
// kProduct; with `premultiply` other than 1 (kSum only) every input is
// multiplied by it before the sum (ncclRedOpCreatePreMulSum), which is how
// Horovod's prescale and postscale, and Average's division, run on a GPU
// without a kernel of hvd's own.
struct Reduction {
  ReduceOp op = ReduceOp::kSum;
  double premultiply = 1.0;
};

// What ncclCommGetAsyncError says of a communicator: its last non-blocking
// call (init, shrink, finalize, a collective's launch) has finished, is
// still running, or failed (`error` names why).
enum class CommHealth { kReady, kInProgress, kFailed };
struct CommState {
  CommHealth health = CommHealth::kReady;
  common::Status error;
};

class Api {
 public:
  virtual ~Api() = default;

  // NCCL's version as NCCL_VERSION_CODE counts it (2.28.9 is 22809).
  virtual int Version() const = 0;
  // The CUDA devices this process sees; an error when the driver finds
  // none or is missing (cudaGetDeviceCount's reason).
  virtual common::Result<int> DeviceCount() = 0;
  virtual common::Status GetUniqueId(UniqueId* id) = 0;
  // Starts rank `rank` of an `nranks` communicator on CUDA device `device`
  // (non-blocking); `*comm` is set even while it is still in progress.
  virtual common::Status InitRank(int device, int nranks, const UniqueId& id,
                                  int rank, Comm* comm) = 0;
  virtual CommState State(Comm comm) = 0;
  // Ends every operation of `comm` and frees it: NCCL's answer to a dead or
  // hung peer, allowed at any time and from any thread.
  virtual common::Status Abort(Comm comm) = 0;
  // Finalize starts flushing `comm` (State() tells when it is done);
  // Destroy then frees it. A clean close.
  virtual common::Status Finalize(Comm comm) = 0;
  virtual common::Status Destroy(Comm comm) = 0;
  // ncclCommShrink: a communicator of `comm`'s ranks less `excluded` (ranks
  // of `comm`), numbered in their old order; with `abort_first` NCCL ends
  // `comm`'s pending operations first (NCCL_SHRINK_ABORT), as after a
  // peer's death. Non-blocking, like InitRank.
  virtual common::Status Shrink(Comm comm, const std::vector<int>& excluded,
                                bool abort_first, Comm* shrunk) = 0;

  // ---- Device memory, streams and events (the CUDA runtime) ----
  // Every call names its device; none synchronises the host with a device.
  virtual common::Result<void*> Allocate(int device, size_t bytes) = 0;
  virtual void Free(int device, void* memory) = 0;
  virtual common::Result<Stream> CreateStream(int device) = 0;
  virtual void DestroyStream(int device, Stream stream) = 0;
  virtual common::Result<Event> CreateEvent(int device) = 0;
  virtual void DestroyEvent(int device, Event event) = 0;
  // The event completes when the work `stream` has been given so far has.
  virtual common::Status Record(Event event, Stream stream) = 0;
  // Work given to `stream` later waits for `event` (on the device).
  virtual common::Status WaitFor(Stream stream, Event event) = 0;
  // Whether the event has completed; an error if its work failed.
  virtual common::Result<bool> Done(Event event) = 0;
  // Copies `bytes` in `stream`'s order, wherever either side lives
  // (cudaMemcpyDefault).
  virtual common::Status Copy(void* to, const void* from, size_t bytes,
                              Stream stream) = 0;

  // ---- Collectives on `comm`, in `stream`'s order ----
  // Counts are elements. Calls between GroupStart and GroupEnd launch as
  // one (NCCL's group semantics); a non-blocking communicator may still be
  // launching when one returns (State() says when it has).
  virtual common::Status GroupStart() = 0;
  virtual common::Status GroupEnd() = 0;
  virtual common::Status AllReduce(const void* send, void* recv, size_t count,
                                   DataType dtype, Reduction reduction,
                                   Comm comm, Stream stream) = 0;
  virtual common::Status Broadcast(const void* send, void* recv, size_t count,
                                   DataType dtype, int root, Comm comm,
                                   Stream stream) = 0;
  // Every rank's `count` elements, in rank order, into each rank's recv.
  virtual common::Status AllGather(const void* send, void* recv, size_t count,
                                   DataType dtype, Comm comm,
                                   Stream stream) = 0;
  // The reduction of every rank's `count` elements, into `root`'s recv
  // only (the others' recv is unused and may be null).
  virtual common::Status Reduce(const void* send, void* recv, size_t count,
                                DataType dtype, Reduction reduction, int root,
                                Comm comm, Stream stream) = 0;
  // Every rank's send holds size * `count` elements; rank r's recv gets
  // the reduction of everyone's r-th block of `count`.
  virtual common::Status ReduceScatter(const void* send, void* recv,
                                       size_t count, DataType dtype,
                                       Reduction reduction, Comm comm,
                                       Stream stream) = 0;
  // Point to point: a Send to `peer` is matched by that peer's Recv from
  // this rank, in the order each pair issues them; both sides must be in
  // one group (or each side's calls must not wait on others').
  virtual common::Status Send(const void* send, size_t count, DataType dtype,
                              int peer, Comm comm, Stream stream) = 0;
  virtual common::Status Recv(void* recv, size_t count, DataType dtype,
                              int peer, Comm comm, Stream stream) = 0;
};

// NCCL and the CUDA runtime themselves. In a build without NCCL
// (HVD_WITH_NCCL=off, or auto without the toolkit) an error that says so.
common::Result<std::unique_ptr<Api>> SystemApi();

// NCCL's version this build was compiled against, 0 without NCCL.
int BuiltNcclVersion();

}  // namespace hvd::runtime::nccl
