// A process set's lane from its first CUDA collective on: made anew from
// rank 0's id, or, in an elastic job's global set, the lane the last
// generation parked (nccl::Gpus::Parked) kept or shrunk when every member
// agrees (nccl::PlanInheritance); and its hierarchy (a host communicator
// and a cross-host one) at the first hierarchical allreduce. Every member
// of the set calls these at the same response, so their collectives (an
// allgather on the set's Gloo context, the ids through the store) meet.
#pragma once

#include <gloo/context.h>

#include <cstdint>
#include <memory>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "ops/nccl/gpus.h"
#include "ops/nccl/lane.h"
#include "ops/shm/host_group.h"
#include "transport/abortable_context.h"

namespace hvd::runtime::nccl {

// This generation's, the same for every set.
struct LaneSettings {
  const RuntimeConfig* config = nullptr;
  int64_t generation = 0;
  std::shared_ptr<AbortSwitch> abort_switch;
  Gpus* gpus = nullptr;
};

// The set a lane serves, on this rank.
struct LaneSite {
  int32_t set_id = 0;
  int rank = 0;
  int size = 1;
  std::shared_ptr<gloo::Context> context;
  // The set's shared-memory group on this host, if it has one: its place
  // (local and cross ranks) shapes the hierarchy.
  const shm::HostGroup* host = nullptr;
};

// The set's lane on `device`.
common::Result<std::shared_ptr<Lane>> MakeLane(const LaneSettings& settings,
                                               const LaneSite& site,
                                               int device);

// The lane's host and cross-host communicators (site.host is set).
common::Status MakeHierarchy(const LaneSettings& settings, const LaneSite& site,
                             Lane& lane);

}  // namespace hvd::runtime::nccl
