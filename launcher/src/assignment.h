// Static rank assignment: which slot runs which rank. Pure.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "launch_config.h"

namespace hvd::launcher {

struct SlotAssignment {
  std::string host;
  int rank = 0;
  int size = 0;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;
  int cross_size = 0;
};

// Fills hosts in the given order, each up to its slots, until `num_proc`
// ranks are placed: ranks on one host are contiguous. cross_rank is the
// host's index among the hosts that run a rank with the same local_rank,
// cross_size how many such hosts there are (Horovod's definition). A host
// listed twice counts once, with its slots added.
common::Result<std::vector<SlotAssignment>> AssignRanks(
    const std::vector<HostSlots>& hosts, int num_proc);

}  // namespace hvd::launcher
