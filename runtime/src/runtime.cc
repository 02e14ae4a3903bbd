#include "hvd/runtime/runtime.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "engine/background_loop.h"
#include "engine/handle_table.h"
#include "engine/process_set.h"
#include "engine/request_checks.h"
#include "engine/tensor_queue.h"
#include "engine/thread_affinity.h"
#include "hvd/runtime/owner_process.h"
#include "ops/nccl/gpus.h"
#include "transport/gloo_contexts.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

constexpr int32_t kGlobalSet = 0;

LoopOptions LoopOptionsOf(const RuntimeConfig& config, WorkerStats* stats) {
  LoopOptions options;
  options.cycle_time = config.cycle_time;
  options.fusion.threshold = static_cast<size_t>(config.fusion_threshold);
  options.fusion.group_fusion = !config.disable_group_fusion;
  options.controller.cache_capacity =
      static_cast<size_t>(config.cache_capacity);
  options.controller.stall_check = config.stall_check;
  options.controller.stall.warn_after = config.stall_check_time;
  options.controller.stall.shutdown_after = config.stall_shutdown_time;
  options.controller.stall.stats = stats;
  options.controller.deadlock_after = config.gloo_timeout;
  return options;
}

}  // namespace

class Runtime::Impl {
 public:
  Impl(RuntimeConfig config, int64_t generation, GlooContexts contexts,
       std::shared_ptr<WorkerStats> stats,
       std::optional<GenerationInfo> membership,
       std::shared_ptr<nccl::Gpus> gpus)
      : config_(std::move(config)),
        generation_(generation),
        stats_(std::move(stats)),
        membership_(std::move(membership)),
        contexts_(std::move(contexts)),
        options_(LoopOptionsOf(config_, stats_.get())),
        gpus_(std::move(gpus)) {
    sockets_.Add(contexts_.global_sockets);
  }

  ~Impl() { Shutdown(); }

  // Rank 0 with HOROVOD_AUTOTUNE: the tuner, handed to the loop.
  Status CreateTuner() {
    if (!config_.autotune || config_.layout.rank != 0) return Status::Ok();
    // Hierarchical allreduce only where every rank has the shared-memory
    // stage, and not against an explicit HOROVOD_HIERARCHICAL_ALLREDUCE.
    const auto& host = sets_.Find(0)->host;
    auto tuner = ParameterManager::Create(
        ParameterManager::OptionsOf(config_, host && host->allreduce_on()));
    if (!tuner.ok()) return tuner.status().WithContext("autotune");
    tuner_ = std::move(*tuner);
    return Status::Ok();
  }

  // Builds the global set and the user's sets 1, 2, ...; connects the sets
  // this rank belongs to.
  Status CreateSets(const std::vector<std::vector<int>>& process_sets) {
    std::vector<int> all(config_.layout.size);
    std::iota(all.begin(), all.end(), 0);
    auto global = std::make_shared<ProcessSet>();
    global->ranks = all;
    global->rank = config_.layout.rank;
    global->context = contexts_.global;
    global->queue = std::make_unique<TensorQueue>(&signal_);
    auto host = ConnectHostGroup();
    if (!host.ok()) return host.status();
    global->host = std::move(*host);
    global->controller = std::make_unique<Controller>(ControlPlaneOf(*global),
                                                      all, options_.controller);
    sets_.Insert(global);
    for (size_t i = 0; i < process_sets.size(); ++i) {
      const int32_t id = static_cast<int32_t>(i + 1);
      auto ranks = NormalizeRanks(process_sets[i], config_.layout.size);
      if (!ranks.ok()) {
        return ranks.status().WithContext("process set " + std::to_string(id));
      }
      if (auto same = sets_.FindByRanks(*ranks); same && same->id != 0) {
        return Status::InvalidArgument(
            "process sets " + std::to_string(same->id) + " and " +
            std::to_string(id) + " have the same ranks");
      }
      std::vector<SocketId> sockets;
      auto set = ConnectProcessSet(
          config_, contexts_.device, contexts_.abort_switch, generation_, id,
          sets_.inserted(), *ranks, &signal_, options_.controller, &sockets);
      sockets_.Add(sockets);
      if (!set.ok()) return set.status();
      sets_.Insert(*set);
    }
    return Status::Ok();
  }

  // Every rank at once, before the other sets connect.
  Result<std::unique_ptr<shm::HostGroup>> ConnectHostGroup() {
    shm::HostGroupSetup setup;
    setup.config = &config_;
    setup.generation = generation_;
    setup.place = config_.layout;
    setup.context = contexts_.global;
    setup.abort_switch = contexts_.abort_switch;
    setup.connect_cross = [this] {
      std::vector<SocketId> sockets;
      auto cross =
          ConnectCrossContext(config_, contexts_.device, contexts_.abort_switch,
                              generation_, &sockets);
      sockets_.Add(sockets);
      return cross;
    };
    return shm::HostGroup::Connect(setup);
  }

  void StartLoop() {
    LoopParts parts;
    parts.config = &config_;
    parts.generation = generation_;
    parts.device = contexts_.device;
    parts.abort_switch = contexts_.abort_switch;
    parts.sets = &sets_;
    parts.handles = &handles_;
    parts.signal = &signal_;
    parts.sockets = &sockets_;
    parts.timeline = &timeline_;
    parts.tuner = std::move(tuner_);
    parts.stats = stats_.get();
    parts.gpus = gpus_.get();
    loop_ = std::make_unique<BackgroundLoop>(std::move(parts), options_);
    thread_ = std::thread([this] {
      loop_->Run();
      stopped_ = true;
    });
  }

  // HOROVOD_THREAD_AFFINITY: the background thread onto its local rank's
  // core.
  Status PinLoopThread() { return PinToLocalRankCore(thread_, config_); }

  bool Stopped() const { return stopped_; }

  void Shutdown() {
    if (!owner_.IsCurrent()) return;  // no thread of ours to join here
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    if (!thread_.joinable()) return;
    signal_.RequestShutdown();
    thread_.join();
    // Writes the rest and closes the file: the next generation's rank 0,
    // maybe another process of this machine, continues it.
    timeline_.Set(nullptr);
    sockets_.Clear();
    // Closes every Gloo pair (and its socket) of this generation.
    for (const auto& set : sets_.All()) sets_.Remove(set->id);
    contexts_ = GlooContexts();
  }

  // Validates and enqueues one tensor or a group of them in one set.
  Result<std::vector<Handle>> Submit(int32_t set_id,
                                     std::vector<TensorEntry> entries) {
    // First, before any lock: in a fork, the thread that would run this
    // (and maybe hold those locks) does not exist.
    Status owner = owner_.Check();
    if (!owner.ok()) return owner;
    auto set = sets_.Find(set_id);
    if (!set) {
      return Status::InvalidArgument(
          "process set " + std::to_string(set_id) +
          " does not exist (use the id hvd.add_process_set gave, or a "
          "ProcessSet registered with hvd.init)");
    }
    if (!set->member()) {
      std::vector<int64_t> ranks(set->ranks.begin(), set->ranks.end());
      return Status::InvalidArgument(
          "rank " + std::to_string(config_.layout.rank) +
          " is not in process set " + std::to_string(set_id) + " (ranks " +
          RanksString(ranks) + ")");
    }
    for (TensorEntry& entry : entries) {
      Status valid = CheckRequest(*set, config_.layout.size, &entry.request);
      if (!valid.ok()) return valid;
    }
    for (TensorEntry& entry : entries) {
      const int32_t device = entry.request.device;
      if (device < 0) continue;
      const std::string what = std::string(OpTypeName(entry.request.type)) +
                               " '" + entry.request.name + "'";
      auto ready = gpus_->RecordReady(device, entry.stream);
      if (!ready.ok()) return ready.status().WithContext(what);
      int32_t set_device = -1;
      if (!set->gpu_device.compare_exchange_strong(set_device, device) &&
          set_device != device) {
        return Status::InvalidArgument(
            what + ": a tensor on cuda:" + std::to_string(device) +
            ", but this rank's collectives in process set " +
            std::to_string(set_id) +
            " run on cuda:" + std::to_string(set_device) +
            " (one device per rank and set: torch.cuda.set_device("
            "hvd.local_rank()) before the first)");
      }
      entry.ready = std::move(*ready);
    }
    // Only valid requests take a number, so that every member counts alike.
    for (TensorEntry& entry : entries) {
      Request& r = entry.request;
      if (r.name.empty()) {
        r.name = UnnamedName(r.type, ++set->unnamed);
      }
    }
    if (entries.size() > 1) {
      // A group is named after its first tensor and its size, which every
      // rank gives alike.
      const std::string group = entries.front().request.name + "+" +
                                std::to_string(entries.size() - 1);
      for (TensorEntry& entry : entries) entry.request.group = group;
    }
    std::vector<Handle> created;
    for (TensorEntry& entry : entries) {
      entry.handle = handles_.Create();
      created.push_back(entry.handle);
    }
    Status added = set->queue->Add(std::move(entries));
    if (!added.ok()) {
      for (Handle handle : created) {
        handles_.Complete(handle, OpResult{added, nullptr, {}, {}, {}});
        (void)handles_.Wait(handle);  // forgets it
      }
      return added;
    }
    handles_.Enqueued();
    return created;
  }

  Result<Handle> SubmitOne(int32_t set_id, TensorEntry entry) {
    std::vector<TensorEntry> entries;
    entries.push_back(std::move(entry));
    auto handles = Submit(set_id, std::move(entries));
    if (!handles.ok()) return handles.status();
    return handles->front();
  }

  void Abort(const std::string& reason) {
    // In a fork, shutdown(2) would cut the parent's connections.
    if (!owner_.IsCurrent()) return;
    bool sockets = sockets_.ShutdownAll();
    bool waits =
        contexts_.abort_switch && contexts_.abort_switch->Abort(reason);
    if (sockets || waits) {
      spdlog::warn("aborting this generation's collectives: {}", reason);
    }
  }

  std::map<int32_t, std::vector<int>> ProcessSets() const {
    std::map<int32_t, std::vector<int>> out;
    for (const auto& set : sets_.All()) out[set->id] = set->ranks;
    return out;
  }

  Result<NegotiationStats> Stats(int32_t id) const {
    auto set = sets_.Find(id);
    if (!set || !set->member()) {
      return Status::InvalidArgument("this rank is in no process set " +
                                     std::to_string(id));
    }
    return set->controller->stats();
  }

  Status StartTimeline(const std::string& path, bool mark_cycles) {
    if (config_.layout.rank != 0) return Status::Ok();
    timeline_.Set(nullptr);  // one writer per file: close the old one first
    auto timeline = Timeline::Open(path, mark_cycles);
    if (!timeline.ok()) return timeline.status();
    std::shared_ptr<Timeline> opened = std::move(*timeline);
    // Before anything of the generation: where its membership began.
    if (membership_) {
      opened->MarkGeneration(generation_, config_.layout.size,
                             membership_->hosts, membership_->reason);
    }
    timeline_.Set(std::move(opened));
    return Status::Ok();
  }

  void StopTimeline() { timeline_.Set(nullptr); }

  const RuntimeConfig& config() const { return config_; }
  const OwnerProcess& owner() const { return owner_; }
  HandleTable& handles() { return handles_; }

 private:
  const OwnerProcess owner_;
  RuntimeConfig config_;
  int64_t generation_;
  // Before everything that may point to it (options_, the loop).
  const std::shared_ptr<WorkerStats> stats_;
  const std::optional<GenerationInfo> membership_;
  GlooContexts contexts_;
  LoopOptions options_;
  // Before the sets and handles, whose entries hold its events.
  const std::shared_ptr<nccl::Gpus> gpus_;
  WorkSignal signal_;
  ProcessSetTable sets_;
  HandleTable handles_;
  SocketRegistry sockets_;
  TimelineSlot timeline_;
  std::unique_ptr<ParameterManager> tuner_;
  std::unique_ptr<BackgroundLoop> loop_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  std::mutex shutdown_mu_;
};

Result<std::unique_ptr<Runtime>> Runtime::Start(
    const RuntimeConfig& config, int64_t generation,
    const std::vector<std::vector<int>>& process_sets,
    std::shared_ptr<WorkerStats> stats,
    std::optional<GenerationInfo> membership,
    std::shared_ptr<nccl::Gpus> gpus) {
  auto contexts =
      ConnectGlooContexts(config, generation, ContextSet::kGlobalOnly);
  if (!contexts.ok()) return contexts.status();
  spdlog::debug("connected the global Gloo context (size {}, {} connections)",
                config.layout.size, contexts->global_sockets.size());
  if (!gpus) gpus = std::make_shared<nccl::Gpus>();
  auto impl = std::make_unique<Impl>(config, generation, std::move(*contexts),
                                     std::move(stats), std::move(membership),
                                     std::move(gpus));
  Status sets = impl->CreateSets(process_sets);
  if (!sets.ok()) return sets;
  Status tuner = impl->CreateTuner();
  if (!tuner.ok()) return tuner;
  if (!config.timeline.empty()) {
    // A diagnostic: training goes on without it.
    Status timeline =
        impl->StartTimeline(config.timeline, config.timeline_mark_cycles);
    if (!timeline.ok()) {
      spdlog::error("no timeline: {}", timeline.ToString());
    }
  }
  impl->StartLoop();
  if (Status pinned = impl->PinLoopThread(); !pinned.ok()) {
    impl->Shutdown();
    return pinned;
  }
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Runtime::~Runtime() {
  // WARNING: in a fork the runtime is abandoned, never freed: freeing it
  // would join threads that do not exist here and close the parent's
  // Gloo pairs through their destructors.
  if (!impl_->owner().IsCurrent()) (void)impl_.release();
}

const RuntimeConfig& Runtime::config() const { return impl_->config(); }

namespace {

TensorEntry Entry(OpType type, const TensorSpec& spec, const void* input,
                  void* output, const AllreduceArgs& args = {}, int root = 0) {
  TensorEntry entry;
  Request& r = entry.request;
  r.type = type;
  r.dtype = spec.dtype;
  r.op = args.op;
  r.prescale = args.prescale;
  r.postscale = args.postscale;
  r.root = root;
  r.shape = spec.shape;
  r.name = spec.name;
  r.device = spec.device;
  entry.input = input;
  entry.output = output;
  entry.stream = spec.stream;
  return entry;
}

Status SameSet(const std::vector<TensorSpec>& specs) {
  if (specs.empty()) {
    return Status::InvalidArgument("a grouped collective needs tensors");
  }
  for (const TensorSpec& spec : specs) {
    if (spec.process_set != specs.front().process_set) {
      return Status::InvalidArgument(
          "the tensors of a grouped collective must share a process set");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Handle> Runtime::Allreduce(const TensorSpec& spec, const void* input,
                                  void* output, const AllreduceArgs& args) {
  return impl_->SubmitOne(spec.process_set,
                          Entry(OpType::kAllreduce, spec, input, output, args));
}

Result<Handle> Runtime::Allgather(const TensorSpec& spec, const void* input) {
  return impl_->SubmitOne(spec.process_set,
                          Entry(OpType::kAllgather, spec, input, nullptr));
}

Result<Handle> Runtime::Broadcast(const TensorSpec& spec, void* buffer,
                                  int root) {
  return impl_->SubmitOne(spec.process_set, Entry(OpType::kBroadcast, spec,
                                                  buffer, buffer, {}, root));
}

Result<Handle> Runtime::Alltoall(const TensorSpec& spec, const void* input,
                                 std::vector<int64_t> splits) {
  TensorEntry entry = Entry(OpType::kAlltoall, spec, input, nullptr);
  entry.request.splits = std::move(splits);
  return impl_->SubmitOne(spec.process_set, std::move(entry));
}

Result<Handle> Runtime::Reducescatter(const TensorSpec& spec, const void* input,
                                      const AllreduceArgs& args) {
  return impl_->SubmitOne(spec.process_set, Entry(OpType::kReducescatter, spec,
                                                  input, nullptr, args));
}

Result<std::vector<Handle>> Runtime::GroupedAllreduce(
    const std::vector<TensorSpec>& specs,
    const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
    const AllreduceArgs& args) {
  Status same = SameSet(specs);
  if (!same.ok()) return same;
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < specs.size(); ++i) {
    entries.push_back(
        Entry(OpType::kAllreduce, specs[i], inputs[i], outputs[i], args));
  }
  return impl_->Submit(specs.front().process_set, std::move(entries));
}

Result<std::vector<Handle>> Runtime::GroupedAllgather(
    const std::vector<TensorSpec>& specs,
    const std::vector<const void*>& inputs) {
  Status same = SameSet(specs);
  if (!same.ok()) return same;
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < specs.size(); ++i) {
    entries.push_back(Entry(OpType::kAllgather, specs[i], inputs[i], nullptr));
  }
  return impl_->Submit(specs.front().process_set, std::move(entries));
}

Result<std::vector<Handle>> Runtime::GroupedReducescatter(
    const std::vector<TensorSpec>& specs,
    const std::vector<const void*>& inputs, const AllreduceArgs& args) {
  Status same = SameSet(specs);
  if (!same.ok()) return same;
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < specs.size(); ++i) {
    entries.push_back(
        Entry(OpType::kReducescatter, specs[i], inputs[i], nullptr, args));
  }
  return impl_->Submit(specs.front().process_set, std::move(entries));
}

Result<Handle> Runtime::Barrier(int32_t process_set) {
  TensorSpec spec;
  spec.dtype = DataType::kUInt8;
  return impl_->SubmitOne(process_set,
                          Entry(OpType::kBarrier, spec, nullptr, nullptr));
}

Result<Handle> Runtime::Join(int32_t process_set) {
  TensorSpec spec;
  spec.dtype = DataType::kUInt8;
  spec.name = "join";
  return impl_->SubmitOne(process_set,
                          Entry(OpType::kJoin, spec, nullptr, nullptr));
}

Result<Handle> Runtime::AddProcessSet(std::vector<int> ranks) {
  const RuntimeConfig& config = impl_->config();
  if (!config.dynamic_process_sets) {
    return Status::InvalidArgument(
        "adding a process set after hvd.init() needs "
        "HOROVOD_DYNAMIC_PROCESS_SETS=1; or pass it to hvd.init(process_sets="
        "[...])");
  }
  auto sorted = NormalizeRanks(std::move(ranks), config.layout.size);
  if (!sorted.ok()) return sorted.status();
  TensorSpec spec;
  spec.dtype = DataType::kUInt8;
  TensorEntry entry = Entry(OpType::kAddProcessSet, spec, nullptr, nullptr);
  entry.request.splits.assign(sorted->begin(), sorted->end());
  entry.request.name = "add_process_set" + RanksString(entry.request.splits);
  return impl_->SubmitOne(kGlobalSet, std::move(entry));
}

Result<Handle> Runtime::RemoveProcessSet(int32_t id) {
  if (!impl_->config().dynamic_process_sets) {
    return Status::InvalidArgument(
        "removing a process set needs HOROVOD_DYNAMIC_PROCESS_SETS=1");
  }
  if (id == kGlobalSet) {
    return Status::InvalidArgument(
        "the global process set 0 cannot be "
        "removed");
  }
  TensorSpec spec;
  spec.dtype = DataType::kUInt8;
  spec.name = "remove_process_set." + std::to_string(id);
  return impl_->SubmitOne(kGlobalSet, Entry(OpType::kRemoveProcessSet, spec,
                                            nullptr, nullptr, {}, id));
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  Status owner = impl_->owner().Check();
  if (!owner.ok()) return owner;
  return impl_->StartTimeline(path, mark_cycles);
}

void Runtime::StopTimeline() {
  if (impl_->owner().IsCurrent()) impl_->StopTimeline();
}

std::map<int32_t, std::vector<int>> Runtime::ProcessSets() const {
  if (!impl_->owner().IsCurrent()) return {};
  return impl_->ProcessSets();
}

Result<NegotiationStats> Runtime::Stats(int32_t process_set) const {
  Status owner = impl_->owner().Check();
  if (!owner.ok()) return owner;
  return impl_->Stats(process_set);
}

Result<bool> Runtime::Poll(Handle handle) {
  Status owner = impl_->owner().Check();
  if (!owner.ok()) return owner;
  return impl_->handles().Poll(handle);
}

// In a fork, a handle enqueued before the fork would never complete: no
// background thread runs here.
Result<OpResult> Runtime::Wait(Handle handle) {
  Status owner = impl_->owner().Check();
  if (!owner.ok()) return owner;
  return impl_->handles().Wait(handle);
}

Status Runtime::CheckProcess() const { return impl_->owner().Check(); }

void Runtime::Abort(const std::string& reason) { impl_->Abort(reason); }

void Runtime::Shutdown() { impl_->Shutdown(); }

bool Runtime::Stopped() const { return impl_->Stopped(); }

}  // namespace hvd::runtime
