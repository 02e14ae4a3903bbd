// The seam over the real NCCL and CUDA runtime (HVD_WITH_NCCL builds only;
// system_api_absent.cc stands in otherwise). The headers give the types;
// the libraries are loaded when SystemApi() is first asked for, so that
// only a process that uses a GPU maps them (cmake/nccl.cmake).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <string>

#include "ops/dtype_dispatch.h"
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(UniqueId::bytes),
              "UniqueId must hold an ncclUniqueId");

ncclComm_t AsNccl(Comm comm) { return static_cast<ncclComm_t>(comm); }
cudaStream_t AsCuda(Stream stream) { return static_cast<cudaStream_t>(stream); }

// The calls hvd makes, resolved from the loaded libraries; the types come
// from the headers, so a mismatch fails the build, not a run.
struct Functions {
  decltype(&cudaGetDeviceCount) get_device_count;
  decltype(&cudaSetDevice) set_device;
  decltype(&cudaGetErrorString) cuda_error_string;
  // cuda_runtime.h adds a template cudaMalloc; this picks the C one.
  decltype(static_cast<cudaError_t (*)(void**, size_t)>(&cudaMalloc)) allocate;
  decltype(&cudaFree) release;
  decltype(&cudaStreamCreateWithFlags) create_stream;
  decltype(&cudaStreamDestroy) destroy_stream;
  decltype(&cudaEventCreateWithFlags) create_event;
  decltype(&cudaEventDestroy) destroy_event;
  decltype(&cudaEventRecord) record;
  decltype(&cudaStreamWaitEvent) wait_event;
  decltype(&cudaEventQuery) query_event;
  decltype(&cudaMemcpyAsync) copy;
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclGetLastError) last_error;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) init_rank_config;
  decltype(&ncclCommGetAsyncError) get_async_error;
  decltype(&ncclCommAbort) abort;
  decltype(&ncclCommFinalize) finalize;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclCommShrink) shrink;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclRedOpCreatePreMulSum) create_premul_sum;
  decltype(&ncclRedOpDestroy) destroy_op;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduce) reduce;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
};

// dlopen by soname first (LD_LIBRARY_PATH, or the copy a GPU build of torch
// has loaded already), then the library the build found. The handle is
// never closed: NCCL's threads outlive any point where that would be safe.
common::Result<void*> Open(const char* soname, const char* built_path) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen(built_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status::InvalidArgument(
        std::string("cannot load ") + soname + " (nor " + built_path +
        "): " + dlerror() +
        "; GPU collectives need the CUDA runtime and "
        "NCCL installed where the worker runs (LD_LIBRARY_PATH)");
  }
  return handle;
}

template <typename Fn>
Status Resolve(void* library, const char* library_name, const char* needed,
               const char* symbol, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (*fn != nullptr) return Status::Ok();
  return Status::InvalidArgument(std::string(library_name) + " has no " +
                                 symbol + ": hvd needs " + needed);
}

common::Result<Functions> Load() {
  auto cudart = Open(HVD_CUDART_SONAME, HVD_CUDART_LIBRARY_PATH);
  if (!cudart.ok()) return cudart.status();
  auto nccl = Open(HVD_NCCL_SONAME, HVD_NCCL_LIBRARY_PATH);
  if (!nccl.ok()) return nccl.status();
  Functions f{};
  Status status;
  auto cuda = [&](const char* symbol, auto* fn) {
    if (status.ok())
      status = Resolve(*cudart, HVD_CUDART_SONAME,
                       "the CUDA runtime it was built with", symbol, fn);
  };
  auto nc = [&](const char* symbol, auto* fn) {
    if (status.ok())
      status =
          Resolve(*nccl, HVD_NCCL_SONAME, "NCCL 2.27 or newer", symbol, fn);
  };
  cuda("cudaGetDeviceCount", &f.get_device_count);
  cuda("cudaSetDevice", &f.set_device);
  cuda("cudaGetErrorString", &f.cuda_error_string);
  cuda("cudaMalloc", &f.allocate);
  cuda("cudaFree", &f.release);
  cuda("cudaStreamCreateWithFlags", &f.create_stream);
  cuda("cudaStreamDestroy", &f.destroy_stream);
  cuda("cudaEventCreateWithFlags", &f.create_event);
  cuda("cudaEventDestroy", &f.destroy_event);
  cuda("cudaEventRecord", &f.record);
  cuda("cudaStreamWaitEvent", &f.wait_event);
  cuda("cudaEventQuery", &f.query_event);
  cuda("cudaMemcpyAsync", &f.copy);
  nc("ncclGetVersion", &f.get_version);
  nc("ncclGetErrorString", &f.error_string);
  nc("ncclGetLastError", &f.last_error);
  nc("ncclGetUniqueId", &f.get_unique_id);
  nc("ncclCommInitRankConfig", &f.init_rank_config);
  nc("ncclCommGetAsyncError", &f.get_async_error);
  nc("ncclCommAbort", &f.abort);
  nc("ncclCommFinalize", &f.finalize);
  nc("ncclCommDestroy", &f.destroy);
  nc("ncclCommShrink", &f.shrink);
  nc("ncclGroupStart", &f.group_start);
  nc("ncclGroupEnd", &f.group_end);
  nc("ncclRedOpCreatePreMulSum", &f.create_premul_sum);
  nc("ncclRedOpDestroy", &f.destroy_op);
  nc("ncclAllReduce", &f.all_reduce);
  nc("ncclBroadcast", &f.broadcast);
  nc("ncclAllGather", &f.all_gather);
  nc("ncclReduce", &f.reduce);
  nc("ncclReduceScatter", &f.reduce_scatter);
  nc("ncclSend", &f.send);
  nc("ncclRecv", &f.recv);
  if (!status.ok()) return status;
  return f;
}

ncclDataType_t NcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return ncclUint8;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      break;
  }
  return ncclFloat64;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
    default:
      return ncclSum;
  }
}

ncclConfig_t NonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

class SystemNccl final : public Api {
 public:
  explicit SystemNccl(Functions f) : f_(f) {
    if (f_.get_version(&version_) != ncclSuccess) version_ = 0;
  }

  // The loaded library's, which may differ from the headers'.
  int Version() const override { return version_; }

  Result<int> DeviceCount() override {
    int count = 0;
    const cudaError_t error = f_.get_device_count(&count);
    if (error != cudaSuccess) {
      return Status::InvalidArgument(
          std::string("no CUDA device is usable here: cudaGetDeviceCount "
                      "says ") +
          f_.cuda_error_string(error) +
          " (is the NVIDIA driver installed and a GPU visible? nvidia-smi "
          "and CUDA_VISIBLE_DEVICES say)");
    }
    return count;
  }

  Status GetUniqueId(UniqueId* id) override {
    ncclUniqueId nccl_id;
    Status status = Check("ncclGetUniqueId", f_.get_unique_id(&nccl_id));
    if (status.ok()) std::memcpy(id->bytes.data(), &nccl_id, sizeof nccl_id);
    return status;
  }

  Status InitRank(int device, int nranks, const UniqueId& id, int rank,
                  Comm* comm) override {
    const cudaError_t error = f_.set_device(device);
    if (error != cudaSuccess) {
      return Status::InvalidArgument(
          "cudaSetDevice(" + std::to_string(device) +
          ") failed: " + f_.cuda_error_string(error));
    }
    ncclUniqueId nccl_id;
    std::memcpy(&nccl_id, id.bytes.data(), sizeof nccl_id);
    ncclConfig_t config = NonBlockingConfig();
    ncclComm_t made = nullptr;
    Status status =
        Check("ncclCommInitRankConfig",
              f_.init_rank_config(&made, nranks, nccl_id, rank, &config));
    *comm = made;
    return status;
  }

  CommState State(Comm comm) override {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t result = f_.get_async_error(AsNccl(comm), &async);
    if (result != ncclSuccess) {
      return {CommHealth::kFailed, NcclError("ncclCommGetAsyncError", result)};
    }
    if (async == ncclSuccess) return {CommHealth::kReady, Status::Ok()};
    if (async == ncclInProgress) return {CommHealth::kInProgress, Status::Ok()};
    return {CommHealth::kFailed, NcclError("an NCCL operation", async)};
  }

  Status Abort(Comm comm) override {
    return Check("ncclCommAbort", f_.abort(AsNccl(comm)));
  }

  Status Finalize(Comm comm) override {
    return Check("ncclCommFinalize", f_.finalize(AsNccl(comm)));
  }

  Status Destroy(Comm comm) override {
    return Check("ncclCommDestroy", f_.destroy(AsNccl(comm)));
  }

  Status Shrink(Comm comm, const std::vector<int>& excluded, bool abort_first,
                Comm* shrunk) override {
    std::vector<int> ranks = excluded;  // NCCL takes a mutable list
    ncclConfig_t config = NonBlockingConfig();
    ncclComm_t made = nullptr;
    Status status =
        Check("ncclCommShrink",
              f_.shrink(AsNccl(comm), ranks.data(),
                        static_cast<int>(ranks.size()), &made, &config,
                        abort_first ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT));
    *shrunk = made;
    return status;
  }

  Result<void*> Allocate(int device, size_t bytes) override {
    void* memory = nullptr;
    Status status = OnDevice(device);
    if (status.ok())
      status = CudaCheck("cudaMalloc", f_.allocate(&memory, bytes));
    if (!status.ok()) {
      return status.WithContext("allocating " + std::to_string(bytes) +
                                " bytes on CUDA device " +
                                std::to_string(device));
    }
    return memory;
  }
  void Free(int device, void* memory) override {
    if (OnDevice(device).ok()) f_.release(memory);
  }

  Result<Stream> CreateStream(int device) override {
    cudaStream_t stream = nullptr;
    Status status = OnDevice(device);
    if (status.ok()) {
      status = CudaCheck("cudaStreamCreateWithFlags",
                         f_.create_stream(&stream, cudaStreamNonBlocking));
    }
    if (!status.ok()) return status;
    return Stream{stream};
  }
  void DestroyStream(int device, Stream stream) override {
    if (OnDevice(device).ok()) {
      f_.destroy_stream(AsCuda(stream));
    }
  }

  Result<Event> CreateEvent(int device) override {
    cudaEvent_t event = nullptr;
    Status status = OnDevice(device);
    if (status.ok()) {
      status = CudaCheck("cudaEventCreateWithFlags",
                         f_.create_event(&event, cudaEventDisableTiming));
    }
    if (!status.ok()) return status;
    return Event{event};
  }
  void DestroyEvent(int device, Event event) override {
    if (OnDevice(device).ok()) {
      f_.destroy_event(static_cast<cudaEvent_t>(event));
    }
  }

  Status Record(Event event, Stream stream) override {
    return CudaCheck(
        "cudaEventRecord",
        f_.record(static_cast<cudaEvent_t>(event), AsCuda(stream)));
  }
  Status WaitFor(Stream stream, Event event) override {
    return CudaCheck(
        "cudaStreamWaitEvent",
        f_.wait_event(AsCuda(stream), static_cast<cudaEvent_t>(event), 0));
  }
  Result<bool> Done(Event event) override {
    const cudaError_t error = f_.query_event(static_cast<cudaEvent_t>(event));
    if (error == cudaErrorNotReady) return false;
    Status status = CudaCheck("cudaEventQuery", error);
    if (!status.ok()) return status;
    return true;
  }
  Status Copy(void* to, const void* from, size_t bytes,
              Stream stream) override {
    return CudaCheck(
        "cudaMemcpyAsync",
        f_.copy(to, from, bytes, cudaMemcpyDefault, AsCuda(stream)));
  }

  Status GroupStart() override {
    return Check("ncclGroupStart", f_.group_start());
  }
  Status GroupEnd() override { return Check("ncclGroupEnd", f_.group_end()); }

  Status AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                   Reduction reduction, Comm comm, Stream stream) override {
    return WithOp(reduction, dtype, comm, [&](ncclRedOp_t op) {
      return Check("ncclAllReduce",
                   f_.all_reduce(send, recv, count, NcclType(dtype), op,
                                 AsNccl(comm), AsCuda(stream)));
    });
  }

  Status Reduce(const void* send, void* recv, size_t count, DataType dtype,
                Reduction reduction, int root, Comm comm,
                Stream stream) override {
    return WithOp(reduction, dtype, comm, [&](ncclRedOp_t op) {
      return Check("ncclReduce",
                   f_.reduce(send, recv, count, NcclType(dtype), op, root,
                             AsNccl(comm), AsCuda(stream)));
    });
  }

  Status ReduceScatter(const void* send, void* recv, size_t count,
                       DataType dtype, Reduction reduction, Comm comm,
                       Stream stream) override {
    return WithOp(reduction, dtype, comm, [&](ncclRedOp_t op) {
      return Check("ncclReduceScatter",
                   f_.reduce_scatter(send, recv, count, NcclType(dtype), op,
                                     AsNccl(comm), AsCuda(stream)));
    });
  }

  Status Send(const void* send, size_t count, DataType dtype, int peer,
              Comm comm, Stream stream) override {
    return Check("ncclSend", f_.send(send, count, NcclType(dtype), peer,
                                     AsNccl(comm), AsCuda(stream)));
  }

  Status Recv(void* recv, size_t count, DataType dtype, int peer, Comm comm,
              Stream stream) override {
    return Check("ncclRecv", f_.recv(recv, count, NcclType(dtype), peer,
                                     AsNccl(comm), AsCuda(stream)));
  }

  Status Broadcast(const void* send, void* recv, size_t count, DataType dtype,
                   int root, Comm comm, Stream stream) override {
    return Check("ncclBroadcast",
                 f_.broadcast(send, recv, count, NcclType(dtype), root,
                              AsNccl(comm), AsCuda(stream)));
  }

  Status AllGather(const void* send, void* recv, size_t count, DataType dtype,
                   Comm comm, Stream stream) override {
    return Check("ncclAllGather",
                 f_.all_gather(send, recv, count, NcclType(dtype), AsNccl(comm),
                               AsCuda(stream)));
  }

 private:
  // Runs `call` with NCCL's operator for `reduction`: a PreMulSum made for
  // it when it premultiplies (its scalar has the tensor's type; NCCL reads
  // it before returning), destroyed once the call has returned, as NCCL
  // allows.
  template <typename Call>
  Status WithOp(Reduction reduction, DataType dtype, Comm comm, Call call) {
    ncclRedOp_t op = NcclOp(reduction.op);
    if (reduction.premultiply == 1.0) return call(op);
    Status made = WithCppType(dtype, [&](auto zero) {
      using T = decltype(zero);
      T scalar = static_cast<T>(reduction.premultiply);
      return Check("ncclRedOpCreatePreMulSum",
                   f_.create_premul_sum(&op, &scalar, NcclType(dtype),
                                        ncclScalarHostImmediate, AsNccl(comm)));
    });
    if (!made.ok()) return made;
    Status status = call(op);
    Status destroyed =
        Check("ncclRedOpDestroy", f_.destroy_op(op, AsNccl(comm)));
    // A leaked operator costs a slot of the communicator's, not a result.
    if (!destroyed.ok()) spdlog::warn("{}", destroyed.message());
    return status;
  }

  // An NCCL failure as a status: NCCL's own words for the code, and its
  // last error message, which names the peer or the transport when it
  // knows them. A system or remote error is kTransport (a reset rebuilds
  // it); the others are misuse or a broken install.
  Status NcclError(const char* call, ncclResult_t result) {
    std::string text =
        std::string(call) + " failed: " + f_.error_string(result);
    const char* last = f_.last_error(nullptr);
    if (last != nullptr && *last != '\0') {
      text += std::string(" (") + last + ")";
    }
    if (result == ncclSystemError || result == ncclRemoteError) {
      return Status::Transport(text);
    }
    return Status::Internal(text);
  }

  Status CudaCheck(const char* call, cudaError_t error) {
    if (error == cudaSuccess) return Status::Ok();
    return Status::Internal(std::string(call) +
                            " failed: " + f_.cuda_error_string(error));
  }

  Status OnDevice(int device) {
    return CudaCheck("cudaSetDevice", f_.set_device(device));
  }

  Status Check(const char* call, ncclResult_t result) {
    if (result == ncclSuccess || result == ncclInProgress) return Status::Ok();
    return NcclError(call, result);
  }

  const Functions f_;
  int version_ = 0;
};

}  // namespace

Result<std::unique_ptr<Api>> SystemApi() {
  Result<Functions> functions = Load();
  if (!functions.ok()) return functions.status();
  return std::unique_ptr<Api>(std::make_unique<SystemNccl>(*functions));
}

int BuiltNcclVersion() { return NCCL_VERSION_CODE; }

}  // namespace hvd::runtime::nccl
