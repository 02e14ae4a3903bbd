#include "assignment.h"

#include <algorithm>

namespace hvd::launcher {

common::Result<std::vector<SlotAssignment>> AssignRanks(
    const std::vector<HostSlots>& listed, int num_proc) {
  std::vector<HostSlots> hosts;
  for (const HostSlots& host : listed) {
    auto same =
        std::find_if(hosts.begin(), hosts.end(),
                     [&](const HostSlots& h) { return h.host == host.host; });
    if (same == hosts.end()) {
      hosts.push_back(host);
    } else {
      same->slots += host.slots;
    }
  }
  std::vector<SlotAssignment> ranks;
  std::vector<int> used;  // ranks placed per host
  for (const HostSlots& host : hosts) {
    int here = std::min(host.slots, num_proc - static_cast<int>(ranks.size()));
    used.push_back(std::max(here, 0));
    for (int local = 0; local < here; ++local) {
      SlotAssignment slot;
      slot.host = host.host;
      slot.layout.rank = static_cast<int>(ranks.size());
      slot.layout.local_rank = local;
      slot.layout.local_size = here;
      ranks.push_back(slot);
    }
  }
  if (static_cast<int>(ranks.size()) < num_proc) {
    return common::Status::InvalidArgument(
        std::to_string(num_proc) + " processes need more slots than the " +
        std::to_string(ranks.size()) + " the hosts offer");
  }
  for (SlotAssignment& slot : ranks) {
    slot.layout.size = num_proc;
    int cross_rank = 0, cross_size = 0;
    for (size_t h = 0; h < hosts.size(); ++h) {
      if (used[h] <= slot.layout.local_rank) continue;
      if (hosts[h].host == slot.host) cross_rank = cross_size;
      ++cross_size;
    }
    slot.layout.cross_rank = cross_rank;
    slot.layout.cross_size = cross_size;
  }
  return ranks;
}

}  // namespace hvd::launcher
