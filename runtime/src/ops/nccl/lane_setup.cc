#include "ops/nccl/lane_setup.h"

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/gloo/gloo_ops.h"
#include "ops/nccl/id_exchange.h"
#include "ops/nccl/watchdog.h"

namespace hvd::runtime::nccl {

using common::Status;

namespace {

// The Gloo path's bounds: the start timeout for setup, the collective
// timeout after.
CommunicatorLimits Limits(const RuntimeConfig& config) {
  CommunicatorLimits limits;
  limits.setup = config.start_timeout;
  limits.op = config.gloo_timeout;
  return limits;
}

std::string SetName(int32_t set_id) {
  return "process set " + std::to_string(set_id);
}

// Every member's answer to what it keeps of the set's last communicator
// (one allgather on the set's Gloo context), and the plan they share.
common::Result<ResetPlan> PlanLane(const LaneSettings& settings,
                                   const LaneSite& site, int device,
                                   int nccl_version,
                                   const std::optional<Gpus::Parked>& parked) {
  Inheritance mine;
  mine.nccl_version = nccl_version;
  mine.refuses = !settings.config->nccl_shrink;
  if (parked && parked->lane->device() == device &&
      parked->lane->communicator().open()) {
    mine.generation = parked->generation;
    mine.rank = parked->lane->communicator().rank();
    mine.size = parked->lane->communicator().size();
    mine.failed = parked->failed;
  }
  const std::array<int64_t, 6> wire = {mine.generation,   mine.rank,
                                       mine.size,         mine.failed ? 1 : 0,
                                       mine.nccl_version, mine.refuses ? 1 : 0};
  std::vector<int64_t> all(wire.size() * site.size);
  Status status = gloo_ops::Allgather(
      site.context, wire.data(), std::vector<size_t>(site.size, sizeof(wire)),
      all.data(),
      "what each rank keeps of " + SetName(site.set_id) +
          "'s NCCL communicator");
  if (!status.ok()) return status;
  std::vector<Inheritance> members(site.size);
  for (int rank = 0; rank < site.size; ++rank) {
    const int64_t* at = all.data() + rank * wire.size();
    members[rank] = {
        at[0],      static_cast<int>(at[1]), static_cast<int>(at[2]),
        at[3] != 0, static_cast<int>(at[4]), at[5] != 0};
  }
  return PlanInheritance(members);
}

}  // namespace

common::Result<std::shared_ptr<Lane>> MakeLane(const LaneSettings& settings,
                                               const LaneSite& site,
                                               int device) {
  const std::string name =
      SetName(site.set_id) + " on cuda:" + std::to_string(device);
  common::Result<std::shared_ptr<Api>> api = settings.gpus->For(device);
  if (!api.ok()) return api.status();
  std::optional<Gpus::Parked> parked = settings.gpus->TakeParked(site.set_id);
  // Whether a member may bring its last generation's communicator is the
  // same on every member: the global set of an elastic job. A set of one
  // has nothing to agree on: a communicator of one needs no peer.
  if (site.set_id == 0 && settings.config->elastic && site.size > 1) {
    common::Result<ResetPlan> plan =
        PlanLane(settings, site, device, (*api)->Version(), parked);
    if (!plan.ok()) return plan.status();
    if (plan->keep) {
      spdlog::info("NCCL communicator of {} kept: every rank is back", name);
      parked->lane->Attach(settings.abort_switch);
      return std::move(parked->lane);
    }
    if (plan->shrink) {
      const auto started = std::chrono::steady_clock::now();
      Communicator& old = parked->lane->communicator();
      const int old_size = old.size();
      auto shrunk = old.Shrink(plan->excluded, plan->abort_first);
      parked.reset();  // its stream and buffer; the communicator is gone
      if (!shrunk.ok()) return shrunk.status().WithContext(name);
      spdlog::info(
          "NCCL communicator of {} shrunk from {} to {} ranks in {:.3f} s",
          name, old_size, (*shrunk)->size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        started)
              .count());
      auto lane = Lane::Create(*api, std::move(*shrunk), settings.abort_switch);
      if (!lane.ok()) return lane.status().WithContext(name);
      return std::shared_ptr<Lane>(std::move(*lane));
    }
    if (parked) {
      spdlog::info("NCCL communicator of {} made anew: {}", name, plan->why);
    }
  }
  parked.reset();  // aborted before its successor takes the device
  // A set of one needs nobody's id (and a job of one, no rendezvous).
  IdExchange exchange =
      site.size == 1 ? IdExchange([](const UniqueId* made) {
        return common::Result<UniqueId>(*made);
      })
                     : StoreIdExchange(*settings.config, settings.generation,
                                       "set" + std::to_string(site.set_id));
  auto comm =
      Communicator::Create(api->get(), exchange, name, device, site.rank,
                           site.size, Limits(*settings.config));
  if (!comm.ok()) return comm.status();
  auto lane = Lane::Create(*api, std::move(*comm), settings.abort_switch);
  if (!lane.ok()) return lane.status().WithContext(name);
  spdlog::info("NCCL communicator of {} is up", name);
  return std::shared_ptr<Lane>(std::move(*lane));
}

Status MakeHierarchy(const LaneSettings& settings, const LaneSite& site,
                     Lane& lane) {
  const common::RankLayout& place = site.host->place();
  const std::string on = " of " + SetName(site.set_id) +
                         " on cuda:" + std::to_string(lane.device());
  // Each sub-communicator's rank 0 publishes its id under its own key.
  auto make = [&](const std::string& what, const std::string& key, int rank,
                  int size) {
    return Communicator::Create(
        &lane.api(),
        StoreIdExchange(*settings.config, settings.generation,
                        "set" + std::to_string(site.set_id) + key),
        what + on, lane.device(), rank, size, Limits(*settings.config));
  };
  // Among this host's ranks of the set; among equal local ranks across
  // hosts.
  auto local =
      make("host communicator", ".local" + std::to_string(place.cross_rank),
           place.local_rank, place.local_size);
  if (!local.ok()) return local.status();
  auto cross = make("cross-host communicator",
                    ".cross" + std::to_string(place.local_rank),
                    place.cross_rank, place.cross_size);
  if (!cross.ok()) {
    (*local)->Abort();  // its peers may not close with it
    return cross.status();
  }
  lane.SetHierarchy({std::move(*local), std::move(*cross)});
  spdlog::info("NCCL hierarchical allreduce{}: {} ranks per host, {} hosts", on,
               place.local_size, place.cross_size);
  return Status::Ok();
}

}  // namespace hvd::runtime::nccl
