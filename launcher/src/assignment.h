// Static rank assignment: which slot runs which rank. Pure.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/rank_layout.h"
#include "hvd/common/status.h"
#include "launch_config.h"

namespace hvd::launcher {

struct SlotAssignment {
  std::string host;
  common::RankLayout layout;
};

// Fills hosts in the given order, each up to its slots, until `num_proc`
// ranks are placed: ranks on one host are contiguous; cross ranks as
// RankLayout defines them. A host listed twice counts once, with its slots
// added.
common::Result<std::vector<SlotAssignment>> AssignRanks(
    const std::vector<HostSlots>& hosts, int num_proc);

}  // namespace hvd::launcher
