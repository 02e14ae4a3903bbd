#include "engine/background_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <new>

#include "negotiation/op_info.h"
#include "ops/nccl/lane_setup.h"
#include "ops/op_table.h"

namespace hvd::runtime {

using common::Status;

namespace {

constexpr char kJoinName[] = "join";

// A tensor's row on the timeline: its name, prefixed with its set outside
// the global one (names repeat across sets).
std::string Row(const ProcessSet& set, const std::string& name) {
  return set.id == 0 ? name : "[set " + std::to_string(set.id) + "] " + name;
}

// One unit's steps on the timeline: each row leaves QUEUE for the first
// step, moves to each next one, and ends with the unit.
class UnitTrace {
 public:
  UnitTrace(Timeline* timeline, std::vector<std::string> rows)
      : timeline_(timeline), rows_(std::move(rows)) {}
  ~UnitTrace() {
    if (!timeline_) return;
    for (const std::string& row : rows_) timeline_->End(row);
  }
  void Step(const char* activity) {
    if (!timeline_) return;
    for (const std::string& row : rows_) {
      timeline_->End(row);
      timeline_->Begin(row, activity);
    }
  }

 private:
  Timeline* timeline_;
  std::vector<std::string> rows_;
};

}  // namespace

BackgroundLoop::BackgroundLoop(LoopParts parts, LoopOptions options)
    : parts_(std::move(parts)), options_(options) {}

Status BackgroundLoop::Run() {
  Status stopped;
  try {
    stopped = Cycles();
  } catch (const std::bad_alloc&) {
    // An allgather output too big for this host, most likely.
    stopped = Status::ResourceExhausted("out of memory in a collective");
  } catch (const std::exception& e) {
    stopped = Status::Internal(e.what());
  }
  // The loop records nothing more: let the runtime's shutdown close the
  // timeline (the next generation's rank 0 continues the file).
  timeline_.reset();
  if (stopped.code() != common::Code::kAborted) {
    spdlog::error("background loop stopped: {}", stopped.ToString());
    stopped = stopped.WithContext(
        "hvd's background loop stopped; this and every later collective fail "
        "until hvd.shutdown() and hvd.init() (an elastic reset)");
  }
  // An elastic job's global set parks its lane, whichever way the
  // generation ended: the next may keep or shrink it (nccl::MakeLane; a final
  // shutdown drops it). Otherwise, after an orderly shutdown every member
  // closes its lanes cleanly; after a failure they are aborted when their
  // sets go.
  const bool orderly = stopped.code() == common::Code::kAborted &&
                       !(parts_.abort_switch && parts_.abort_switch->aborted());
  for (const auto& set : parts_.sets->All()) {
    if (!set->lane) continue;
    if (set->id == 0 && parts_.config->elastic &&
        set->lane->communicator().open()) {
      const bool failed = !orderly || set->lane->communicator().failed();
      set->lane->Detach();
      parts_.gpus->Park(set->id,
                        {parts_.generation, failed, std::move(set->lane)});
    } else if (orderly) {
      Status closed = set->lane->Close();
      if (!closed.ok()) spdlog::warn("{}", closed.ToString());
    }
  }
  for (Handle handle : failed_) {
    parts_.handles->Complete(handle, OpResult{stopped, nullptr, {}, {}, {}});
  }
  for (const auto& set : parts_.sets->All()) {
    if (!set->member()) continue;
    for (TensorEntry& entry : set->queue->Close(stopped)) {
      parts_.handles->Complete(entry.handle,
                               OpResult{stopped, nullptr, {}, {}, {}});
    }
  }
  return stopped;
}

Status BackgroundLoop::Cycles() {
  while (true) {
    parts_.signal->WaitFor(options_.cycle_time, options_.burst_quiet);
    timeline_ = parts_.timeline ? parts_.timeline->Get() : nullptr;
    if (timeline_) timeline_->MarkCycle();
    const bool shutdown = parts_.signal->shutdown_requested();
    // The global set first: it may add or remove the others.
    bool stop = false;
    Status status = SetCycle(*parts_.sets->Find(0), shutdown, &stop);
    if (!status.ok()) return status;
    if (stop) {
      return Status::Aborted("hvd was shut down (hvd.shutdown() on some rank)");
    }
    for (const auto& set : parts_.sets->All()) {
      if (set->id == 0 || !set->member()) continue;
      status = SetCycle(*set, false, &stop);
      if (!status.ok()) return status;
    }
    if (parts_.tuner && cycle_bytes_ > 0 &&
        parts_.tuner->Record(cycle_bytes_, std::chrono::steady_clock::now())) {
      const TunableParams& next = parts_.tuner->current();
      parts_.sets->Find(0)->controller->Announce(
          Tuning{next.fusion_threshold, next.cycle_time.count(),
                 next.cache_enabled, next.hierarchical_allreduce});
    }
    cycle_bytes_ = 0;
  }
}

void BackgroundLoop::Apply(const Tuning& tuning) {
  options_.fusion.threshold = static_cast<size_t>(tuning.fusion_threshold);
  options_.cycle_time = std::chrono::microseconds(tuning.cycle_time_us);
  for (const auto& set : parts_.sets->All()) {
    if (set->member())
      set->controller->cache().set_enabled(tuning.cache_enabled);
    // Every rank has the same host groups (they agreed at init).
    if (set->host) set->host->set_allreduce_on(tuning.hierarchical_allreduce);
  }
  spdlog::debug(
      "autotune: fusion threshold {} bytes, cycle time {} us, cache {}, "
      "hierarchical allreduce {}",
      tuning.fusion_threshold, tuning.cycle_time_us,
      tuning.cache_enabled ? "on" : "off",
      tuning.hierarchical_allreduce ? "on" : "off");
}

Status BackgroundLoop::SetCycle(ProcessSet& set, bool shutdown, bool* stop) {
  // Asked before popping, so that a rank that says it waits has sent every
  // request it made before its wait.
  const bool waiting = parts_.handles->QuietWait(&set.activity_seen);
  std::vector<Request> requests = set.queue->PopRequests();
  if (timeline_) {
    for (const Request& r : requests) {
      timeline_->Begin(Row(set, r.name), OpInfoOf(r.type).negotiate_activity);
      negotiating_.insert(Row(set, r.name));
    }
  }
  auto responses =
      set.controller->Cycle(std::move(requests), shutdown, waiting);
  if (!responses.ok()) return responses.status();
  if (timeline_) {
    for (const Response& r : responses->responses) {
      const std::string row = Row(set, r.request.name);
      if (negotiating_.erase(row)) timeline_->End(row);
      timeline_->Begin(row, kActivityQueue);
    }
  }
  if (!responses->stop.empty()) return Status::Timeout(responses->stop);
  CatchUpUnnamed(set, responses->responses);
  if (responses->tuning) Apply(*responses->tuning);
  Status status = ExecuteAll(set, responses->responses);
  if (!status.ok()) return status;
  *stop = responses->shutdown;
  return Status::Ok();
}

// Runs the responses in the coordinator's order, fused as PlanFusion says;
// every rank plans from the same list, so every rank fuses the same way.
Status BackgroundLoop::ExecuteAll(ProcessSet& set,
                                  const std::vector<Response>& responses) {
  if (responses.empty()) return Status::Ok();
  std::vector<TensorEntry> entries(responses.size());
  // A rank that has joined runs what the others submitted (an allreduce
  // with zeros, a barrier) and drops the result; an error (an op that
  // cannot run with joined ranks) is not its own, and it keeps waiting in
  // its join.
  std::vector<std::vector<uint8_t>> stand_ins;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& r = responses[i].request;
    const std::string& name = r.type == OpType::kJoin ? kJoinName : r.name;
    auto entry = set.queue->Take(name);
    if (entry) {
      entries[i] = std::move(*entry);
      continue;
    }
    // An error may fail what only other ranks submitted (a deadlock ends
    // every rank's pending collectives): nothing to fail here.
    if (!set.queue->Has(kJoinName) &&
        responses[i].kind == Response::Kind::kRun) {
      return Status::Internal("the coordinator answered '" + name +
                              "', which this rank never submitted");
    }
    TensorEntry& stand_in = entries[i];
    stand_in.request = r;
    if (responses[i].kind != Response::Kind::kRun) continue;
    const size_t bytes =
        ElementCount(stand_in.request.shape) * DataTypeSize(r.dtype);
    stand_ins.emplace_back(bytes, 0);
    stand_in.input = stand_ins.back().data();
    stand_ins.emplace_back(bytes, 0);
    stand_in.output = stand_ins.back().data();
  }
  if (parts_.tuner) {
    for (const Response& r : responses) {
      if (r.kind == Response::Kind::kRun) {
        cycle_bytes_ += static_cast<int64_t>(FusionBytes(r));
      }
    }
  }
  for (const std::vector<size_t>& unit :
       PlanFusion(responses, options_.fusion)) {
    const Response& head = responses[unit.front()];
    std::vector<std::string> rows;
    if (timeline_) {
      for (size_t i : unit) rows.push_back(Row(set, responses[i].request.name));
    }
    UnitTrace trace(timeline_.get(), std::move(rows));
    Status status;
    const OpExecutors& op = OpExecutorsOf(head.request.type);
    const int device = entries[unit.front()].request.device;
    const FusedExecutor fused = device < 0 ? op.fused : op.gpu_fused;
    common::Result<Backends> backends = Backends{};
    if (head.kind == Response::Kind::kRun) {
      backends =
          BackendsOf(set, device, head.request.type == OpType::kAllreduce);
    }
    if (!backends.ok()) {
      status = backends.status();
    } else if (head.kind == Response::Kind::kRun && fused != nullptr) {
      std::vector<const TensorEntry*> unit_entries;
      std::vector<const Response*> unit_responses;
      for (size_t i : unit) {
        unit_entries.push_back(&entries[i]);
        unit_responses.push_back(&responses[i]);
      }
      std::vector<OpResult> results;
      status =
          fused(*backends, unit_entries, unit_responses, &fusion_buffer_,
                &results, [&](const char* activity) { trace.Step(activity); });
      if (status.ok()) {
        std::vector<Handle> handles;
        for (size_t k = 0; k < unit.size(); ++k) {
          const TensorEntry& entry = entries[unit[k]];
          if (k < results.size() && results[k].status.ok()) Count(entry);
          handles.push_back(entry.handle);
        }
        parts_.handles->CompleteAll(handles, std::move(results));
      }
    } else {
      trace.Step(OpInfoOf(head.request.type).activity);
      status = ExecuteOne(*backends, head, entries[unit.front()]);
    }
    if (!status.ok()) {
      // Fail this unit and what this cycle has not run yet with the
      // loop's status.
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].handle != 0) failed_.push_back(entries[i].handle);
      }
      return status;
    }
    for (size_t i : unit) entries[i].handle = 0;  // completed
  }
  return Status::Ok();
}

common::Result<Backends> BackgroundLoop::BackendsOf(ProcessSet& set, int device,
                                                    bool allreduce) {
  Backends backends{set.context, set.host.get(), nullptr, nullptr};
  if (device < 0) return backends;
  const nccl::LaneSettings settings{parts_.config, parts_.generation,
                                    parts_.abort_switch, parts_.gpus};
  const nccl::LaneSite site{set.id, set.rank, set.size(), set.context,
                            set.host.get()};
  if (!set.lane) {
    common::Result<std::shared_ptr<nccl::Lane>> lane =
        nccl::MakeLane(settings, site, device);
    if (!lane.ok()) return lane.status();
    set.lane = std::move(*lane);
  } else if (set.lane->device() != device) {
    // Submit fixes one device per rank and set.
    return Status::Internal(
        "process set " + std::to_string(set.id) +
        "'s lane is on cuda:" + std::to_string(set.lane->device()) +
        ", a unit on cuda:" + std::to_string(device));
  }
  backends.lane = set.lane.get();
  const shm::HostGroup* host = set.host.get();
  if (allreduce && host != nullptr && host->allreduce_on() &&
      host->place().cross_size > 1) {
    if (set.lane->hierarchy() == nullptr) {
      Status made = nccl::MakeHierarchy(settings, site, *set.lane);
      if (!made.ok()) return made;
    }
    backends.gpu_hierarchy = set.lane->hierarchy();
  }
  return backends;
}

Status BackgroundLoop::ExecuteOne(const Backends& backends,
                                  const Response& response,
                                  const TensorEntry& entry) {
  HandleTable& handles = *parts_.handles;
  if (response.kind == Response::Kind::kError) {
    // A name only other ranks submitted (handle 0) is not this rank's to
    // report.
    if (entry.handle != 0 && response.error_message != logged_refusal_) {
      spdlog::warn("{}", response.error_message);
      logged_refusal_ = response.error_message;
    }
    OpResult failed;
    failed.status = Status(response.error_code, response.error_message);
    handles.Complete(entry.handle, std::move(failed));
    return Status::Ok();
  }
  const OpExecutors& op = OpExecutorsOf(response.request.type);
  const SingleExecutor single =
      entry.request.device < 0 ? op.single : op.gpu_single;
  if (single == nullptr) return ChangeSets(response, entry);
  OpResult result = single(backends, response, entry);
  if (!result.status.ok()) return result.status;
  Count(entry);
  handles.Complete(entry.handle, std::move(result));
  return Status::Ok();
}

void BackgroundLoop::Count(const TensorEntry& entry) {
  // A rank that has joined runs stand-ins for what the others submitted
  // (handle 0): not its own collectives.
  if (!parts_.stats || entry.handle == 0) return;
  const Request& r = entry.request;
  const int64_t bytes =
      OpInfoOf(r.type).payload
          ? static_cast<int64_t>(ElementCount(r.shape) * DataTypeSize(r.dtype))
          : 0;
  parts_.stats->OpCompleted(r.type, bytes);
}

// Every rank runs the same changes in the same order (they come through
// the global set's responses), so every table stays the same.
Status BackgroundLoop::ChangeSets(const Response& response,
                                  const TensorEntry& entry) {
  HandleTable& handles = *parts_.handles;
  const Request& r = response.request;
  OpResult result;
  if (r.type == OpType::kAddProcessSet) {
    std::vector<int> ranks(r.splits.begin(), r.splits.end());
    if (auto existing = parts_.sets->FindByRanks(ranks)) {
      result.status = Status::InvalidArgument(
          "a process set with ranks " + RanksString(ranks) +
          " exists already (id " + std::to_string(existing->id) + ")");
    } else {
      const int32_t id = parts_.sets->next_id();
      std::vector<SocketId> sockets;
      auto set = ConnectProcessSet(
          *parts_.config, parts_.device, parts_.abort_switch, parts_.generation,
          id, parts_.sets->inserted(), ranks, parts_.signal,
          options_.controller, &sockets);
      parts_.sockets->Add(sockets);
      if (!set.ok()) {
        return set.status().WithContext("adding process set " +
                                        RanksString(ranks));
      }
      parts_.sets->Insert(*set);
      result.sizes = {id};
      spdlog::info("added process set {} with ranks {}", id,
                   RanksString(ranks));
    }
  } else {
    const int32_t id = r.root;
    auto set = id == 0 ? nullptr : parts_.sets->Remove(id);
    if (!set) {
      result.status = Status::InvalidArgument(
          "there is no process set " + std::to_string(id) + " to remove" +
          (id == 0 ? " (the global set 0 cannot be removed)" : ""));
    } else if (set->member()) {
      const Status removed = Status::InvalidArgument(
          "process set " + std::to_string(id) +
          " was removed while this collective was pending");
      for (TensorEntry& pending : set->queue->Close(removed)) {
        handles.Complete(pending.handle,
                         OpResult{removed, nullptr, {}, {}, {}});
      }
    }
  }
  if (result.status.ok()) Count(entry);
  handles.Complete(entry.handle, std::move(result));
  return Status::Ok();
}

}  // namespace hvd::runtime
