#include "job/assignment.h"

#include <algorithm>

namespace hvd::launcher {

common::Result<std::vector<SlotAssignment>> AssignRanks(
    const std::vector<HostSlots>& listed, int num_proc) {
  std::vector<SlotGroup> groups;
  for (const HostSlots& host : listed) {
    SlotGroup& group = groups.emplace_back(SlotGroup{host.host, {}});
    for (int i = 0; i < host.slots; ++i) group.indices.push_back(i);
  }
  return AssignSlots(groups, num_proc);
}

common::Result<std::vector<SlotAssignment>> AssignSlots(
    const std::vector<SlotGroup>& groups, int num_proc) {
  std::vector<SlotAssignment> ranks;
  std::vector<int> used;  // ranks placed per group
  for (const SlotGroup& group : groups) {
    const int here = std::min(static_cast<int>(group.indices.size()),
                              num_proc - static_cast<int>(ranks.size()));
    used.push_back(std::max(here, 0));
    for (int local = 0; local < here; ++local) {
      SlotAssignment slot;
      slot.host = group.host;
      slot.layout.rank = static_cast<int>(ranks.size());
      slot.layout.local_rank = local;
      slot.layout.local_size = here;
      if (group.indices[local] != local) slot.index = group.indices[local];
      ranks.push_back(slot);
    }
  }
  if (static_cast<int>(ranks.size()) < num_proc) {
    return common::Status::InvalidArgument(
        std::to_string(num_proc) + " processes need more slots than the " +
        std::to_string(ranks.size()) + " the hosts offer");
  }
  // Each rank's group, to count the groups that run its local rank.
  std::vector<size_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    group_of.insert(group_of.end(), used[g], g);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    SlotAssignment& slot = ranks[r];
    slot.layout.size = num_proc;
    int cross_rank = 0, cross_size = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (used[g] <= slot.layout.local_rank) continue;
      if (g == group_of[r]) cross_rank = cross_size;
      ++cross_size;
    }
    slot.layout.cross_rank = cross_rank;
    slot.layout.cross_size = cross_size;
  }
  return ranks;
}

}  // namespace hvd::launcher
