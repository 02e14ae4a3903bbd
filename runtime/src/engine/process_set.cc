#include "engine/process_set.h"

#include <algorithm>

#include "ops/shm/host_control_plane.h"
#include "transport/gloo_contexts.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

template <typename Int>
std::string JoinRanks(const std::vector<Int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return out + "]";
}

}  // namespace

void CatchUpUnnamed(ProcessSet& set, const std::vector<Response>& responses) {
  for (const Response& response : responses) {
    auto number = UnnamedNumber(response.request.type, response.request.name);
    if (!number) continue;
    int64_t seen = set.unnamed.load();
    while (seen < *number &&
           !set.unnamed.compare_exchange_weak(seen, *number)) {
    }
  }
}

std::string RanksString(const std::vector<int>& ranks) {
  return JoinRanks(ranks);
}

std::string RanksString(const std::vector<int64_t>& ranks) {
  return JoinRanks(ranks);
}

Result<std::vector<int>> NormalizeRanks(std::vector<int> ranks,
                                        int world_size) {
  if (ranks.empty()) {
    return Status::InvalidArgument("a process set needs at least one rank");
  }
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size) {
      return Status::InvalidArgument(
          "process set names rank " + std::to_string(ranks[i]) +
          ", but the job has ranks 0 to " + std::to_string(world_size - 1));
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      return Status::InvalidArgument("process set names rank " +
                                     std::to_string(ranks[i]) + " twice");
    }
  }
  return ranks;
}

Result<std::shared_ptr<ProcessSet>> ConnectProcessSet(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    int32_t id, int64_t serial, std::vector<int> ranks, WorkSignal* signal,
    const ControllerOptions& options, std::vector<SocketId>* sockets) {
  auto set = std::make_shared<ProcessSet>();
  set->id = id;
  set->ranks = std::move(ranks);
  auto at = std::find(set->ranks.begin(), set->ranks.end(), config.layout.rank);
  if (at == set->ranks.end()) return set;
  set->rank = static_cast<int>(at - set->ranks.begin());
  auto context = ConnectSetContext(config, device, abort_switch, generation, id,
                                   serial, set->rank, set->size(), sockets);
  if (!context.ok()) return context.status();
  set->context = *context;
  set->queue = std::make_unique<TensorQueue>(signal);
  // Its own shared-memory stage, when its ranks share hosts evenly.
  shm::HostGroupSetup setup;
  setup.config = &config;
  setup.generation = generation;
  setup.place = shm::SetPlace(config.layout, set->ranks);
  setup.context = set->context;
  setup.set_tag = "s" + std::to_string(id) + "." + std::to_string(serial);
  setup.abort_switch = abort_switch;
  setup.connect_cross = [&] {
    return ConnectSetContext(
        config, device, abort_switch, generation, id, serial,
        setup.place.cross_rank, setup.place.cross_size, sockets,
        "cross/" + std::to_string(setup.place.local_rank) + "/");
  };
  auto host = shm::HostGroup::Connect(setup);
  if (!host.ok()) return host.status();
  set->host = std::move(*host);
  // A deadlock is proven only when every rank of the job waits: a rank
  // outside the set may still unblock a member through another set.
  ControllerOptions set_options = options;
  if (set->size() != config.layout.size) set_options.deadlock_after = {};
  set->controller = std::make_unique<Controller>(ControlPlaneOf(*set),
                                                 set->ranks, set_options);
  return set;
}

std::unique_ptr<ControlPlane> ControlPlaneOf(const ProcessSet& set) {
  if (set.host) return std::make_unique<shm::HostControlPlane>(set.host);
  return std::make_unique<GlooControlPlane>(set.context);
}

void ProcessSetTable::Insert(std::shared_ptr<ProcessSet> set) {
  std::lock_guard<std::mutex> lock(mu_);
  free_ids_.erase(std::remove(free_ids_.begin(), free_ids_.end(), set->id),
                  free_ids_.end());
  next_id_ = std::max(next_id_, set->id + 1);
  ++inserted_;
  sets_[set->id] = std::move(set);
}

std::shared_ptr<ProcessSet> ProcessSetTable::Find(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::shared_ptr<ProcessSet> ProcessSetTable::FindByRanks(
    const std::vector<int>& ranks) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, set] : sets_) {
    if (set->ranks == ranks) return set;
  }
  return nullptr;
}

std::shared_ptr<ProcessSet> ProcessSetTable::Remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  auto set = std::move(it->second);
  sets_.erase(it);
  if (id != 0) free_ids_.push_back(id);
  return set;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ProcessSet>> all;
  for (const auto& [id, set] : sets_) all.push_back(set);
  return all;
}

int64_t ProcessSetTable::inserted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inserted_;
}

int32_t ProcessSetTable::next_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_ids_.empty() ? next_id_ : free_ids_.front();
}

}  // namespace hvd::runtime
