// _hvd_core: the pybind11 door to the runtime. It holds the process's one
// Runtime between init() and shutdown(), takes numpy arrays, and releases the
// GIL whenever it may block (connecting, waiting, shutting down). Arrays are
// kept alive by the Python side (hvd/ops.py) until their handle is waited on.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>

#include "arrays.h"
#include "errors.h"
#include "hvd/common/build_info.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/logging.h"
#include "hvd/runtime/elastic_worker.h"
#include "hvd/runtime/reporter.h"
#include "hvd/runtime/runtime.h"
#include "hvd/runtime/worker_stats.h"

namespace hvd::python {
namespace {

namespace py = pybind11;
using common::Status;
using runtime::Runtime;

// The process's hvd state, its only process-wide variable on the C++ side
// (errors.cc keeps the Python exception types). Guarded by the GIL for
// every access except the blocking calls, which work on their own
// reference to the runtime so that a concurrent shutdown() cannot free it
// under them.
struct WorkerState {
  // The current generation's runtime, between init() and shutdown().
  std::shared_ptr<Runtime> runtime;
  // Elastic mode: the notification server, the joined generation, the sync
  // flag and Abort routing, from the first init() to the process's end, so
  // that no update is missed between two generations.
  std::unique_ptr<runtime::ElasticWorker> elastic;
  // In a fork, the runtime it inherited and gave up at shutdown(): the
  // fork may start a job of its own, not take the parent's place in this
  // one.
  std::shared_ptr<Runtime> parents_runtime;
  // What this process has done (collectives, steps, commits, recovery
  // marks), across every runtime it starts; and, under hvdrun, the thread
  // that reports it to the driver, from the first init() to the exit. A
  // fork counts afresh and reports nothing: the parent's are set aside.
  std::shared_ptr<runtime::WorkerStats> stats;
  std::unique_ptr<runtime::Reporter> reporter;
  std::shared_ptr<runtime::WorkerStats> parents_stats;
  // How many runtimes this process has started. Until the launcher hands
  // out generations (elastic mode), it keeps the Gloo keys of a re-init
  // apart from the last one's; every rank of a static job re-inits the
  // same number of times, so they agree on it.
  int64_t starts = 0;
};
WorkerState g_state;

std::shared_ptr<Runtime> Current() {
  if (!g_state.runtime) {
    Raise(Status::InvalidArgument(
        "hvd is not initialized; call hvd.init() first"));
  }
  return g_state.runtime;
}

// This process's elastic worker; none in static mode or in a fork (whose
// copy is the parent's).
runtime::ElasticWorker* OwnElasticWorker() {
  if (!g_state.elastic || !g_state.elastic->CheckProcess().ok()) {
    return nullptr;
  }
  return g_state.elastic.get();
}

// This process's WorkerStats, made at the first use (afresh in a fork).
runtime::WorkerStats& OwnStats() {
  if (g_state.stats && !g_state.stats->IsCurrentProcess()) {
    g_state.parents_stats = std::move(g_state.stats);
  }
  if (!g_state.stats) g_state.stats = std::make_shared<runtime::WorkerStats>();
  return *g_state.stats;
}

// Under hvdrun, the first init() that started a runtime starts the
// reporter; a fork keeps the parent's (which does nothing there).
void StartReporter(const runtime::RuntimeConfig& config) {
  if (g_state.reporter) return;
  if (auto options = runtime::ReporterOptions::For(config)) {
    g_state.reporter =
        runtime::Reporter::Start(std::move(*options), g_state.stats);
  }
}

// Raises the error of a call on `runtime`: in a fork of the process that
// started it, ForkedProcessError (whatever the call found first);
// otherwise the exception of the status's kind.
[[noreturn]] void RaiseFrom(const Runtime& runtime, const Status& status) {
  Status fork = runtime.CheckProcess();
  if (!fork.ok()) RaiseForked(fork);
  Raise(status);
}

template <typename T>
T Checked(const Runtime& runtime, common::Result<T> result) {
  if (!result.ok()) RaiseFrom(runtime, result.status());
  return std::move(*result);
}

// `process_sets`: the user's sets (global ranks each), which become sets
// 1, 2, ... of this generation.
void Init(const std::vector<std::vector<int>>& process_sets) {
  if (g_state.runtime) {
    // A fork must give up the parent's runtime before it starts its own.
    Status owner = g_state.runtime->CheckProcess();
    if (!owner.ok()) RaiseForked(owner);
    return;
  }
  auto config = ValueOrRaise(runtime::RuntimeConfig::FromEnv());
  // (An elastic worker's fork is refused by its ElasticWorker, naming the
  // slot.)
  if (g_state.parents_runtime && !config.elastic &&
      !config.rendezvous_addr.empty()) {
    const auto& parent = g_state.parents_runtime->config();
    if (config.rendezvous_addr == parent.rendezvous_addr &&
        config.rendezvous_port == parent.rendezvous_port) {
      RaiseForked(Status::InvalidArgument(
          "this process is a fork of rank " +
          std::to_string(parent.layout.rank) + " of the job at " +
          parent.rendezvous_addr + ":" +
          std::to_string(parent.rendezvous_port) +
          ", whose place in the job it cannot take: use collectives only in "
          "the parent, or run hvd in the fork as a job of its own (without "
          "the HOROVOD_* variables hvdrun set)"));
    }
  }
  Status logging = common::InitLogging("worker", config.layout.rank);
  if (!logging.ok()) Raise(logging);
  runtime::WorkerStats& stats = OwnStats();
  int64_t generation = g_state.starts;
  if (!config.elastic) stats.GenerationJoined(0, /*syncs=*/false);
  std::optional<runtime::GenerationInfo> membership;
  if (config.elastic) {
    if (!g_state.elastic) {
      g_state.elastic = ValueOrRaise(runtime::ElasticWorker::Start(config));
    }
    common::Result<runtime::JoinedGeneration> joined =
        Status::Internal("unset");
    {
      py::gil_scoped_release release;
      joined = g_state.elastic->JoinNext(config);
    }
    if (!joined.ok()) {
      if (joined.status().code() == common::Code::kNotFound) {
        RaiseRemoved(joined.status());
      }
      if (!g_state.elastic->CheckProcess().ok()) RaiseForked(joined.status());
      Raise(joined.status());
    }
    config = joined->config;
    generation = joined->generation;
    stats.GenerationJoined(generation, joined->sync);
    membership = runtime::GenerationInfo{joined->reason, joined->hosts};
    (void)common::InitLogging("worker", config.layout.rank);
  }
  common::Result<std::unique_ptr<Runtime>> started = Status::Internal("unset");
  {
    py::gil_scoped_release release;
    // An elastic worker's GPUs serve every generation (a failed one's NCCL
    // communicator may be shrunk by the next).
    started = Runtime::Start(
        config, generation, process_sets, g_state.stats, membership,
        g_state.elastic ? g_state.elastic->gpus() : nullptr);
  }
  g_state.runtime = ValueOrRaise(std::move(started));
  stats.RuntimeStarted(config.layout.rank, config.layout.size);
  StartReporter(config);
  if (config.elastic) {
    Status attached = g_state.elastic->Attach(g_state.runtime, generation);
    if (!attached.ok()) Raise(attached);
  }
  ++g_state.starts;
}

// In a fork the runtime is the parent's: it is set aside untouched (see
// Runtime), and the fork may then init() a job of its own. `reset`: an
// elastic reset, whose next generation may keep or shrink the NCCL
// communicator this one leaves; any other shutdown gives it up.
void Shutdown(bool reset) {
  std::shared_ptr<Runtime> runtime = std::move(g_state.runtime);
  g_state.runtime.reset();
  if (runtime && !runtime->CheckProcess().ok()) {
    g_state.parents_runtime = std::move(runtime);
    return;
  }
  py::gil_scoped_release release;
  if (runtime) runtime->Shutdown();
  auto* elastic = OwnElasticWorker();
  if (!reset && elastic != nullptr) elastic->DropGpuCommunicators();
}

py::object Wait(runtime::Handle handle) {
  auto runtime = Current();
  common::Result<runtime::OpResult> waited = Status::Internal("unset");
  {
    py::gil_scoped_release release;
    waited = runtime->Wait(handle);
  }
  runtime::OpResult result = Checked(*runtime, std::move(waited));
  if (!result.status.ok()) Raise(result.status);
  if (result.device_data.memory) {
    return py::make_tuple(py::cast(std::move(result.device_data)), result.shape,
                          result.sizes);
  }
  if (!result.data) {
    if (result.sizes.empty()) return py::none();
    return py::cast(result.sizes);
  }
  return py::make_tuple(BytesArray(std::move(result.data)), result.shape,
                        result.sizes);
}

runtime::AllreduceArgs ReduceArgs(int op, double prescale, double postscale) {
  if (op < 0 || op >= runtime::kReduceOpCount) {
    Raise(Status::InvalidArgument("unknown reduce op " + std::to_string(op)));
  }
  return {static_cast<runtime::ReduceOp>(op), prescale, postscale};
}

runtime::TensorSpec InSet(runtime::TensorSpec spec, int32_t process_set) {
  spec.process_set = process_set;
  return spec;
}

// The specs and data pointers of a grouped op's tensors (numpy or CUDA
// arrays, BufferOf); `writable` for the ops that write in place.
struct Group {
  std::vector<runtime::TensorSpec> specs;
  std::vector<void*> data;
};

Group GroupOf(const std::vector<py::object>& arrays,
              const std::vector<std::string>& names, int32_t process_set,
              bool writable) {
  if (arrays.size() != names.size()) {
    Raise(Status::InvalidArgument("one name per tensor, please"));
  }
  Group group;
  for (size_t i = 0; i < arrays.size(); ++i) {
    Buffer buffer = BufferOf(arrays[i], names[i], writable);
    group.specs.push_back(InSet(buffer.spec, process_set));
    group.data.push_back(buffer.data);
  }
  return group;
}

std::vector<const void*> Inputs(const Group& group) {
  return {group.data.begin(), group.data.end()};
}

PYBIND11_MODULE(_hvd_core, m) {
  m.doc() = "hvd's runtime; use the hvd package, not this module";
  m.def("set_exception_types", &SetExceptionTypes);
  // The runtime keeps this process's keys and takes them out of the
  // environment (config.h, TakeProcessKeys); the names it took out, so
  // that Python drops os.environ's copies too.
  m.def("take_worker_keys", [] { return runtime::TakeProcessKeys().removed; });
  // A CUDA result the runtime allocated (an allgather's): flat bytes on
  // `device`, freed when the last holder of this object (or of a tensor
  // made from its interface) lets go. The host waited for it: no stream.
  py::class_<runtime::DeviceBytes>(m, "DeviceBytes")
      .def_readonly("device", &runtime::DeviceBytes::device)
      .def_readonly("nbytes", &runtime::DeviceBytes::bytes)
      .def_property_readonly(
          "__cuda_array_interface__", [](const runtime::DeviceBytes& bytes) {
            py::dict interface;
            interface["shape"] = py::make_tuple(bytes.bytes);
            interface["typestr"] = "|u1";
            interface["data"] = py::make_tuple(
                reinterpret_cast<uintptr_t>(bytes.memory.get()), false);
            interface["strides"] = py::none();
            interface["stream"] = py::none();
            interface["version"] = 3;
            return interface;
          });
  m.def("init", &Init,
        py::arg("process_sets") = std::vector<std::vector<int>>{});
  m.def("shutdown", &Shutdown, py::arg("reset") = false);
  m.def("is_initialized", [] { return g_state.runtime != nullptr; });
  // HOROVOD_ELASTIC_TIMEOUT in seconds: how long hvd.elastic.run keeps
  // trying to rejoin the job. Read from the environment as init reads it,
  // so that it is known when an init fails.
  m.def("elastic_timeout_seconds", [] {
    auto config = ValueOrRaise(runtime::RuntimeConfig::FromEnv());
    return std::chrono::duration<double>(config.elastic_timeout).count();
  });
  // The runtime's loop has ended (a rank's shutdown, an error).
  m.def("loop_stopped",
        [] { return g_state.runtime && g_state.runtime->Stopped(); });
  // What this build contains (hvd.gloo_built() and friends).
  m.def("build_info", [] {
    const common::BuildInfo info = common::GetBuildInfo();
    py::dict facts;
    facts["version"] = info.version;
    facts["pytorch"] = info.pytorch;
    facts["gloo"] = info.gloo;
    facts["nccl_version"] = info.nccl_version;
    facts["cuda"] = info.cuda;
    facts["rocm"] = info.rocm;
    facts["mpi"] = info.mpi;
    facts["ddl"] = info.ddl;
    facts["ccl"] = info.ccl;
    return facts;
  });
  // The generation a HostsUpdated announced that this worker has not joined
  // yet, or 0.
  m.def("pending_hosts_update", [] {
    auto* elastic = OwnElasticWorker();
    return elastic ? elastic->PendingHostsUpdate() : int64_t{0};
  });
  // What that update changed: Horovod's HostUpdateResult bits (1 removed,
  // 2 added), or 0.
  m.def("pending_hosts_changes", [] {
    auto* elastic = OwnElasticWorker();
    return elastic ? elastic->PendingHostsChanges() : 0;
  });
  // Whether the current generation starts with a sync from rank 0: always
  // outside elastic mode; there, when the driver says some slot is new.
  m.def("generation_needs_sync", [] {
    auto* elastic = OwnElasticWorker();
    return elastic ? elastic->sync() : true;
  });
  // Progress for the driver's reports (docs/design.md, "Worker reports"):
  // the end of an elastic generation's state sync, a DistributedOptimizer
  // step, a state commit.
  m.def("mark_synced", [] { OwnStats().Synced(); });
  m.def("count_step", [] { OwnStats().Stepped(); });
  m.def("count_commit", [] { OwnStats().Committed(); });
  // At the interpreter's exit, after shutdown(): one last report, then the
  // reporter's thread ends. Nothing in a fork.
  m.def("stop_reports", [] {
    if (!g_state.reporter) return;
    py::gil_scoped_release release;
    g_state.reporter->Stop();
  });
  m.def("rank", [] { return Current()->config().layout.rank; });
  m.def("size", [] { return Current()->config().layout.size; });
  m.def("local_rank", [] { return Current()->config().layout.local_rank; });
  m.def("local_size", [] { return Current()->config().layout.local_size; });
  m.def("cross_rank", [] { return Current()->config().layout.cross_rank; });
  m.def("cross_size", [] { return Current()->config().layout.cross_size; });

  // `output` may be `input` (in place); it must have the same shape/dtype
  // and live where the input does. Numpy arrays or CUDA arrays (BufferOf).
  m.def("allreduce_async", [](py::object input, py::object output,
                              std::string name, int op, double prescale,
                              double postscale, int32_t process_set) {
    Buffer in = BufferOf(input, std::move(name), false);
    Buffer out = BufferOf(output, in.spec.name, true);
    if (out.spec.shape != in.spec.shape || out.spec.dtype != in.spec.dtype ||
        out.spec.device != in.spec.device) {
      Raise(Status::InvalidArgument("'" + in.spec.name +
                                    "': output differs from input in shape, "
                                    "dtype or device"));
    }
    auto runtime = Current();
    return Checked(*runtime, runtime->Allreduce(
                                 InSet(in.spec, process_set), in.data, out.data,
                                 ReduceArgs(op, prescale, postscale)));
  });
  // In place on each array (numpy or CUDA).
  m.def("grouped_allreduce_async",
        [](std::vector<py::object> buffers, std::vector<std::string> names,
           int op, double prescale, double postscale, int32_t process_set) {
          Group group = GroupOf(buffers, names, process_set, true);
          auto runtime = Current();
          return Checked(*runtime, runtime->GroupedAllreduce(
                                       group.specs, Inputs(group), group.data,
                                       ReduceArgs(op, prescale, postscale)));
        });
  // Numpy or CUDA arrays, here and below; a CUDA array's result is a
  // DeviceBytes.
  m.def("allgather_async",
        [](py::object input, std::string name, int32_t process_set) {
          Buffer in = BufferOf(input, std::move(name), false);
          auto runtime = Current();
          return Checked(*runtime, runtime->Allgather(
                                       InSet(in.spec, process_set), in.data));
        });
  m.def("grouped_allgather_async",
        [](std::vector<py::object> inputs, std::vector<std::string> names,
           int32_t process_set) {
          Group group = GroupOf(inputs, names, process_set, false);
          auto runtime = Current();
          return Checked(*runtime,
                         runtime->GroupedAllgather(group.specs, Inputs(group)));
        });
  m.def("broadcast_async",
        [](py::object buffer, int root, std::string name, int32_t process_set) {
          Buffer in_place = BufferOf(buffer, std::move(name), true);
          auto runtime = Current();
          return Checked(*runtime,
                         runtime->Broadcast(InSet(in_place.spec, process_set),
                                            in_place.data, root));
        });
  // `splits`: rows for each rank of the set; empty for equal parts.
  m.def("alltoall_async", [](py::object input, std::vector<int64_t> splits,
                             std::string name, int32_t process_set) {
    Buffer in = BufferOf(input, std::move(name), false);
    auto runtime = Current();
    return Checked(*runtime, runtime->Alltoall(InSet(in.spec, process_set),
                                               in.data, std::move(splits)));
  });
  m.def("reducescatter_async", [](py::object input, std::string name, int op,
                                  double prescale, double postscale,
                                  int32_t process_set) {
    Buffer in = BufferOf(input, std::move(name), false);
    auto runtime = Current();
    return Checked(*runtime,
                   runtime->Reducescatter(InSet(in.spec, process_set), in.data,
                                          ReduceArgs(op, prescale, postscale)));
  });
  m.def("grouped_reducescatter_async",
        [](std::vector<py::object> inputs, std::vector<std::string> names,
           int op, double prescale, double postscale, int32_t process_set) {
          Group group = GroupOf(inputs, names, process_set, false);
          auto runtime = Current();
          return Checked(*runtime, runtime->GroupedReducescatter(
                                       group.specs, Inputs(group),
                                       ReduceArgs(op, prescale, postscale)));
        });
  m.def("barrier_async", [](int32_t process_set) {
    auto runtime = Current();
    return Checked(*runtime, runtime->Barrier(process_set));
  });
  m.def("join_async", [](int32_t process_set) {
    auto runtime = Current();
    return Checked(*runtime, runtime->Join(process_set));
  });
  m.def("add_process_set_async", [](std::vector<int> ranks) {
    auto runtime = Current();
    return Checked(*runtime, runtime->AddProcessSet(std::move(ranks)));
  });
  m.def("remove_process_set_async", [](int32_t id) {
    auto runtime = Current();
    return Checked(*runtime, runtime->RemoveProcessSet(id));
  });
  m.def("start_timeline", [](std::string path, bool mark_cycles) {
    auto runtime = Current();
    Status started = runtime->StartTimeline(path, mark_cycles);
    if (!started.ok()) RaiseFrom(*runtime, started);
  });
  m.def("stop_timeline", [] { Current()->StopTimeline(); });
  // {id: [global ranks]} of every process set now.
  m.def("process_sets", [] { return Current()->ProcessSets(); });
  // This rank's negotiation counters of a set, for tests and tuning.
  m.def("negotiation_stats", [](int32_t process_set) {
    auto runtime = Current();
    auto stats = Checked(*runtime, runtime->Stats(process_set));
    py::dict out;
    out["cycles"] = stats.cycles;
    out["coordinator_rounds"] = stats.coordinator_rounds;
    out["cache_hits"] = stats.cache_hits;
    out["negotiation_seconds"] = stats.negotiation_seconds;
    return out;
  });
  m.def("poll", [](runtime::Handle handle) {
    auto runtime = Current();
    return Checked(*runtime, runtime->Poll(handle));
  });
  // None; the sizes of a join or an added set; or for allgather, alltoall
  // and reducescatter (flat uint8 array, shape, sizes).
  m.def("wait", &Wait);
}

}  // namespace
}  // namespace hvd::python
