// _hvd_core: the pybind11 door to the runtime. It holds the process's one
// Runtime between init() and shutdown(), takes numpy arrays, and releases the
// GIL whenever it may block (connecting, waiting, shutting down). Arrays are
// kept alive by the Python side (hvd/ops.py) until their handle is waited on.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>

#include <memory>
#include <mutex>

#include "arrays.h"
#include "errors.h"
#include "hvd/common/logging.h"
#include "hvd/notify/server.h"
#include "hvd/runtime/elastic.h"
#include "hvd/runtime/runtime.h"

namespace hvd::python {
namespace {

namespace py = pybind11;
using common::Status;
using runtime::Runtime;

// Guarded by the GIL for every access except the blocking calls, which
// work on their own reference so that a concurrent shutdown() cannot free
// the runtime under them.
std::shared_ptr<Runtime> g_runtime;
// How many runtimes this process has started. Until the launcher hands out
// generations (elastic mode), it keeps the Gloo keys of a re-init apart from
// the last one's; every rank of a static job re-inits the same number of
// times, so they agree on it.
int64_t g_starts = 0;
// Elastic mode: the generation this process last joined, whether it asked
// every rank to sync, and the notification server, which lives as long as
// the process so that no update is missed between two generations.
int64_t g_generation = 0;
bool g_sync = true;
std::unique_ptr<notify::NotificationServer> g_notify;
// What an Abort from the driver may touch: it arrives on the notification
// server's thread, without the GIL, so it gets its own lock and a weak
// reference to the current runtime and its generation.
std::mutex g_abort_mu;
std::weak_ptr<Runtime> g_abortable;
int64_t g_abortable_generation = 0;

void OnAbort(const notify::Abort& abort) {
  std::lock_guard<std::mutex> lock(g_abort_mu);
  auto runtime = g_abortable.lock();
  // An Abort for an older generation is late news.
  if (runtime && abort.generation == g_abortable_generation) {
    runtime->Abort(abort.reason);
  }
}

std::shared_ptr<Runtime> Current() {
  if (!g_runtime) {
    Raise(Status::InvalidArgument(
        "hvd is not initialized; call hvd.init() first"));
  }
  return g_runtime;
}

// `process_sets`: the user's sets (global ranks each), which become sets
// 1, 2, ... of this generation.
void Init(const std::vector<std::vector<int>>& process_sets) {
  if (g_runtime) return;
  auto config = ValueOrRaise(runtime::RuntimeConfig::FromEnv());
  Status logging = common::InitLogging("worker", config.rank);
  if (!logging.ok()) Raise(logging);
  int64_t generation = g_starts;
  if (config.elastic) {
    if (!g_notify) {
      g_notify = ValueOrRaise(notify::NotificationServer::Start(
          config.hostname, config.secret, &OnAbort));
    }
    common::Result<runtime::JoinedGeneration> joined =
        Status::Internal("unset");
    {
      py::gil_scoped_release release;
      joined = runtime::JoinNextGeneration(config, g_generation,
                                           g_notify->address());
    }
    if (!joined.ok()) {
      if (joined.status().code() == common::Code::kNotFound) {
        RaiseRemoved(joined.status());
      }
      Raise(joined.status());
    }
    config = joined->config;
    generation = joined->generation;
    g_sync = joined->sync;
    (void)common::InitLogging("worker", config.rank);
  }
  common::Result<std::unique_ptr<Runtime>> started = Status::Internal("unset");
  {
    py::gil_scoped_release release;
    started = Runtime::Start(config, generation, process_sets);
  }
  g_runtime = ValueOrRaise(std::move(started));
  if (config.elastic) {
    g_generation = generation;
    std::lock_guard<std::mutex> lock(g_abort_mu);
    g_abortable = g_runtime;
    g_abortable_generation = generation;
  }
  ++g_starts;
}

void Shutdown() {
  std::shared_ptr<Runtime> runtime = std::move(g_runtime);
  g_runtime.reset();
  if (!runtime) return;
  py::gil_scoped_release release;
  runtime->Shutdown();
}

py::object Wait(runtime::Handle handle) {
  auto runtime = Current();
  common::Result<runtime::OpResult> waited = Status::Internal("unset");
  {
    py::gil_scoped_release release;
    waited = runtime->Wait(handle);
  }
  runtime::OpResult result = ValueOrRaise(std::move(waited));
  if (!result.status.ok()) Raise(result.status);
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

// The specs and data pointers of a grouped op's inputs.
struct Group {
  std::vector<runtime::TensorSpec> specs;
  std::vector<const void*> inputs;
};

Group GroupOf(const std::vector<py::array>& arrays,
              const std::vector<std::string>& names, int32_t process_set) {
  if (arrays.size() != names.size()) {
    Raise(Status::InvalidArgument("one name per tensor, please"));
  }
  Group group;
  for (size_t i = 0; i < arrays.size(); ++i) {
    group.specs.push_back(
        InSet(SpecOf(arrays[i], names[i], false), process_set));
    group.inputs.push_back(arrays[i].data());
  }
  return group;
}

PYBIND11_MODULE(_hvd_core, m) {
  m.doc() = "hvd's runtime; use the hvd package, not this module";
  m.def("set_exception_types", &SetExceptionTypes);
  m.def("init", &Init,
        py::arg("process_sets") = std::vector<std::vector<int>>{});
  m.def("shutdown", &Shutdown);
  m.def("is_initialized", [] { return g_runtime != nullptr; });
  // The generation a HostsUpdated announced that this worker has not joined
  // yet, or 0.
  m.def("pending_hosts_update", [] {
    int64_t announced = g_notify ? g_notify->latest_generation() : 0;
    return announced > g_generation ? announced : int64_t{0};
  });
  // Whether the current generation starts with a sync from rank 0: always
  // outside elastic mode; there, when the driver says some slot is new.
  m.def("generation_needs_sync", [] { return g_sync; });
  m.def("rank", [] { return Current()->config().rank; });
  m.def("size", [] { return Current()->config().size; });
  m.def("local_rank", [] { return Current()->config().local_rank; });
  m.def("local_size", [] { return Current()->config().local_size; });
  m.def("cross_rank", [] { return Current()->config().cross_rank; });
  m.def("cross_size", [] { return Current()->config().cross_size; });

  // `output` may be `input` (in place); it must have the same shape/dtype.
  m.def("allreduce_async", [](py::array input, py::array output,
                              std::string name, int op, double prescale,
                              double postscale, int32_t process_set) {
    auto spec = InSet(SpecOf(input, std::move(name), false), process_set);
    auto out = SpecOf(output, spec.name, true);
    if (out.shape != spec.shape || out.dtype != spec.dtype) {
      Raise(Status::InvalidArgument("'" + spec.name +
                                    "': output differs from input in shape "
                                    "or dtype"));
    }
    return ValueOrRaise(
        Current()->Allreduce(spec, input.data(), output.mutable_data(),
                             ReduceArgs(op, prescale, postscale)));
  });
  // In place on each array.
  m.def("grouped_allreduce_async",
        [](std::vector<py::array> buffers, std::vector<std::string> names,
           int op, double prescale, double postscale, int32_t process_set) {
          Group group = GroupOf(buffers, names, process_set);
          std::vector<void*> outputs;
          for (py::array& buffer : buffers) {
            SpecOf(buffer, "", true);  // writable
            outputs.push_back(buffer.mutable_data());
          }
          return ValueOrRaise(
              Current()->GroupedAllreduce(group.specs, group.inputs, outputs,
                                          ReduceArgs(op, prescale, postscale)));
        });
  m.def("allgather_async",
        [](py::array input, std::string name, int32_t process_set) {
          auto spec = InSet(SpecOf(input, std::move(name), false), process_set);
          return ValueOrRaise(Current()->Allgather(spec, input.data()));
        });
  m.def("grouped_allgather_async", [](std::vector<py::array> inputs,
                                      std::vector<std::string> names,
                                      int32_t process_set) {
    Group group = GroupOf(inputs, names, process_set);
    return ValueOrRaise(Current()->GroupedAllgather(group.specs, group.inputs));
  });
  m.def("broadcast_async",
        [](py::array buffer, int root, std::string name, int32_t process_set) {
          auto spec = InSet(SpecOf(buffer, std::move(name), true), process_set);
          return ValueOrRaise(
              Current()->Broadcast(spec, buffer.mutable_data(), root));
        });
  // `splits`: rows for each rank of the set; empty for equal parts.
  m.def("alltoall_async", [](py::array input, std::vector<int64_t> splits,
                             std::string name, int32_t process_set) {
    auto spec = InSet(SpecOf(input, std::move(name), false), process_set);
    return ValueOrRaise(
        Current()->Alltoall(spec, input.data(), std::move(splits)));
  });
  m.def("reducescatter_async",
        [](py::array input, std::string name, int op, double prescale,
           double postscale, int32_t process_set) {
          auto spec = InSet(SpecOf(input, std::move(name), false), process_set);
          return ValueOrRaise(Current()->Reducescatter(
              spec, input.data(), ReduceArgs(op, prescale, postscale)));
        });
  m.def("grouped_reducescatter_async",
        [](std::vector<py::array> inputs, std::vector<std::string> names,
           int op, double prescale, double postscale, int32_t process_set) {
          Group group = GroupOf(inputs, names, process_set);
          return ValueOrRaise(Current()->GroupedReducescatter(
              group.specs, group.inputs, ReduceArgs(op, prescale, postscale)));
        });
  m.def("barrier_async", [](int32_t process_set) {
    return ValueOrRaise(Current()->Barrier(process_set));
  });
  m.def("join_async", [](int32_t process_set) {
    return ValueOrRaise(Current()->Join(process_set));
  });
  m.def("add_process_set_async", [](std::vector<int> ranks) {
    return ValueOrRaise(Current()->AddProcessSet(std::move(ranks)));
  });
  m.def("remove_process_set_async", [](int32_t id) {
    return ValueOrRaise(Current()->RemoveProcessSet(id));
  });
  m.def("start_timeline", [](std::string path, bool mark_cycles) {
    Status started = Current()->StartTimeline(path, mark_cycles);
    if (!started.ok()) Raise(started);
  });
  m.def("stop_timeline", [] { Current()->StopTimeline(); });
  // {id: [global ranks]} of every process set now.
  m.def("process_sets", [] { return Current()->ProcessSets(); });
  // This rank's negotiation counters of a set, for tests and tuning.
  m.def("negotiation_stats", [](int32_t process_set) {
    auto stats = ValueOrRaise(Current()->Stats(process_set));
    py::dict out;
    out["cycles"] = stats.cycles;
    out["coordinator_rounds"] = stats.coordinator_rounds;
    out["cache_hits"] = stats.cache_hits;
    out["negotiation_seconds"] = stats.negotiation_seconds;
    return out;
  });
  m.def("poll", [](runtime::Handle handle) {
    return ValueOrRaise(Current()->Poll(handle));
  });
  // None; the sizes of a join or an added set; or for allgather, alltoall
  // and reducescatter (flat uint8 array, shape, sizes).
  m.def("wait", &Wait);
}

}  // namespace
}  // namespace hvd::python
