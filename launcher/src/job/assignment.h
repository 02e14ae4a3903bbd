// Static rank assignment: which slot runs which rank. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hvd/common/rank_layout.h"
#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

struct SlotAssignment {
  std::string host;
  common::RankLayout layout;
  // The slot's index on its host, which names it ("host:index"), when it
  // differs from layout.local_rank: an elastic worker keeps its slot while
  // a lower slot of its host is out of the job. A new worker always starts
  // with its index as its local rank (its slot name, and the GPU a script
  // picks by local rank).
  std::optional<int> index;
};

// The slot's index on its host.
inline int SlotIndex(const SlotAssignment& slot) {
  return slot.index.value_or(slot.layout.local_rank);
}

// Fills hosts in the given order, each up to its slots, until `num_proc`
// ranks are placed: ranks on one host are contiguous; cross ranks as
// RankLayout defines them. The hosts are distinct: every list comes
// through host_slots.h, which refuses a host listed twice.
common::Result<std::vector<SlotAssignment>> AssignRanks(
    const std::vector<HostSlots>& hosts, int num_proc);

// Some slots of one host, by index, in the order they take ranks. The
// runtime sees each group as a host: its ranks are contiguous and its
// local ranks 0..n-1 in this order. A host usually is one group of
// ascending indices; an elastic job may split one in two (job_policy.h,
// "Slots").
struct SlotGroup {
  std::string host;
  std::vector<int> indices;
};

// Places ranks on the groups in order, each up to its slots, until
// `num_proc` are placed, as AssignRanks does for hosts (cross ranks count
// each group as a host). A slot whose index is not its local rank carries
// it (SlotAssignment::index).
common::Result<std::vector<SlotAssignment>> AssignSlots(
    const std::vector<SlotGroup>& groups, int num_proc);

}  // namespace hvd::launcher
