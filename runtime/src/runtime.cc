#include "hvd/runtime/runtime.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "background_loop.h"
#include "gloo_contexts.h"
#include "handle_table.h"
#include "tensor_queue.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

class Runtime::Impl {
 public:
  Impl(RuntimeConfig config, GlooContexts contexts)
      : config_(std::move(config)),
        contexts_(std::move(contexts)),
        loop_(contexts_, &queue_, &handles_, config_.cycle_time,
              config_.fusion_threshold) {
    thread_ = std::thread([this] { loop_.Run(); });
  }

  ~Impl() { Shutdown(); }

  void Shutdown() {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    if (!thread_.joinable()) return;
    queue_.RequestShutdown();
    thread_.join();
    {
      std::lock_guard<std::mutex> sockets(sockets_mu_);
      contexts_.global_sockets.clear();
    }
    // Closes every Gloo pair (and its socket) of this generation.
    contexts_ = GlooContexts();
  }

  Result<Handle> Enqueue(OpType type, const TensorSpec& spec, const void* input,
                         void* output, const AllreduceArgs& args, int root) {
    Status valid = Validate(type, spec, root);
    if (!valid.ok()) return valid;
    TensorEntry entry;
    Request& r = entry.request;
    r.type = type;
    r.dtype = spec.dtype;
    r.op = args.op;
    r.prescale = args.prescale;
    r.postscale = args.postscale;
    r.root = root;
    r.shape = spec.shape;
    r.name = spec.name.empty() ? std::string(OpTypeName(type)) + ".noname." +
                                     std::to_string(++unnamed_)
                               : spec.name;
    entry.input = input;
    entry.output = output;
    entry.handle = handles_.Create();
    Handle handle = entry.handle;
    Status added = queue_.Add(std::move(entry));
    if (!added.ok()) {
      handles_.Complete(handle, OpResult{added, nullptr, {}});
      (void)handles_.Wait(handle);  // forgets it
      return added;
    }
    return handle;
  }

  void Abort(const std::string& reason) {
    std::lock_guard<std::mutex> lock(sockets_mu_);
    if (contexts_.global_sockets.empty()) return;
    spdlog::warn("aborting this generation's collectives: {}", reason);
    ShutdownSockets(contexts_.global_sockets);
    contexts_.global_sockets.clear();
  }

  const RuntimeConfig& config() const { return config_; }
  HandleTable& handles() { return handles_; }

 private:
  Status Validate(OpType type, const TensorSpec& spec, int root) const {
    const std::string what =
        std::string(OpTypeName(type)) + " '" + spec.name + "'";
    if (static_cast<int>(spec.dtype) >= kDataTypeCount) {
      return Status::InvalidArgument(what + ": unsupported data type");
    }
    for (int64_t dim : spec.shape) {
      if (dim < 0)
        return Status::InvalidArgument(what + ": negative dimension");
    }
    if (type == OpType::kAllgather && spec.shape.empty()) {
      return Status::InvalidArgument(
          what +
          ": allgather needs at least one dimension to concatenate "
          "along; reshape a scalar to [1]");
    }
    if (type == OpType::kBroadcast && (root < 0 || root >= config_.size)) {
      return Status::InvalidArgument(what + ": root rank " +
                                     std::to_string(root) + " is not in [0, " +
                                     std::to_string(config_.size) + ")");
    }
    return Status::Ok();
  }

  RuntimeConfig config_;
  GlooContexts contexts_;
  TensorQueue queue_;
  HandleTable handles_;
  BackgroundLoop loop_;
  std::thread thread_;
  std::mutex shutdown_mu_;
  // Guards contexts_.global_sockets, which Abort reads from another thread
  // while the background thread may be blocked in a collective.
  std::mutex sockets_mu_;
  std::atomic<int64_t> unnamed_{0};
};

Result<std::unique_ptr<Runtime>> Runtime::Start(const RuntimeConfig& config,
                                                int64_t generation) {
  for (const std::string& name : config.unimplemented) {
    spdlog::warn("{} is set but hvd does not implement it yet; ignored", name);
  }
  auto contexts =
      ConnectGlooContexts(config, generation, ContextSet::kGlobalOnly);
  if (!contexts.ok()) return contexts.status();
  spdlog::debug("connected the global Gloo context (size {}, {} connections)",
                config.size, contexts->global_sockets.size());
  return std::unique_ptr<Runtime>(
      new Runtime(std::make_unique<Impl>(config, std::move(*contexts))));
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

const RuntimeConfig& Runtime::config() const { return impl_->config(); }

Result<Handle> Runtime::Allreduce(const TensorSpec& spec, const void* input,
                                  void* output, const AllreduceArgs& args) {
  return impl_->Enqueue(OpType::kAllreduce, spec, input, output, args, 0);
}

Result<Handle> Runtime::Allgather(const TensorSpec& spec, const void* input) {
  return impl_->Enqueue(OpType::kAllgather, spec, input, nullptr, {}, 0);
}

Result<Handle> Runtime::Broadcast(const TensorSpec& spec, void* buffer,
                                  int root) {
  return impl_->Enqueue(OpType::kBroadcast, spec, buffer, buffer, {}, root);
}

Result<Handle> Runtime::Barrier() {
  TensorSpec spec;
  spec.dtype = DataType::kUInt8;
  return impl_->Enqueue(OpType::kBarrier, spec, nullptr, nullptr, {}, 0);
}

Result<bool> Runtime::Poll(Handle handle) {
  return impl_->handles().Poll(handle);
}

Result<OpResult> Runtime::Wait(Handle handle) {
  return impl_->handles().Wait(handle);
}

void Runtime::Abort(const std::string& reason) { impl_->Abort(reason); }

void Runtime::Shutdown() { impl_->Shutdown(); }

}  // namespace hvd::runtime
