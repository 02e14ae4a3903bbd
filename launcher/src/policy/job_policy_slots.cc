// JobPolicy's slot rules (job_policy.h, the elastic rules): which slots of
// which hosts the next generation uses, in which rank order, and whether a
// failure takes its host out of the job or only its slot.
//
// A worker's slot is its identity for life: the runtime names it after the
// local rank the worker started with (HOROVOD_HOSTNAME:HOROVOD_LOCAL_RANK),
// and a script picks its GPU by its first local rank. So a new worker must
// start with its slot's index as its local rank, and the runtime wants a
// host's local ranks dense and in rank order. Survivors keep their slots
// whatever their local rank becomes.
#include <algorithm>

#include "policy/job_policy.h"

namespace hvd::launcher {

bool JobPolicy::KeepsHostOf(TimePoint now, const Worker& failed) const {
  std::set<std::string> usable;  // once, not once per holder
  for (const HostSlots& host : table_.Usable(now)) usable.insert(host.host);
  bool holder_here = false;
  for (const auto& [id, w] : workers_) {
    if (id == failed.id || !w.active() || !IsHolder(w)) continue;
    if (w.host != failed.host) {
      // Horovod's rule loses nothing: a holder elsewhere carries the state.
      if (usable.count(w.host) != 0) return false;
    } else {
      holder_here = true;
    }
  }
  if (!holder_here) return false;
  // Keeping the holders is worth it when the job can go on: the slot comes
  // back after its cooldown, or enough slots are left without it. Else
  // Horovod's rule ends the job at once rather than after the elastic
  // timeout.
  return config_.cooldown.has_value() ||
         static_cast<int>(WouldBeSlots(now, failed.slot).size()) >=
             config_.min_np;
}

std::map<std::string, const JobPolicy::Worker*> JobPolicy::ActiveBySlot()
    const {
  std::map<std::string, const Worker*> active;
  for (const auto& [id, w] : workers_) {
    if (w.active()) active.emplace(w.slot, &w);
  }
  return active;
}

std::vector<int> JobPolicy::UsableSlotsOf(
    const HostSlots& host, TimePoint now, const std::string& also_out,
    const std::map<std::string, const Worker*>& active) const {
  const std::set<int> out = table_.SlotsOut(host.host, now);
  std::vector<int> indices;
  bool gap = false;  // a lower slot is out: new workers cannot start here
  for (int index = 0; index < host.slots; ++index) {
    const std::string name = rendezvous::SlotName(host.host, index);
    if (out.count(index) || name == also_out) {
      gap = true;
    } else if (active.count(name) != 0 || !gap) {
      indices.push_back(index);  // a survivor, or a new worker at its index
    }
  }
  return indices;
}

std::vector<SlotAssignment> JobPolicy::WouldBeSlots(
    TimePoint now, const std::string& also_out) const {
  std::vector<HostSlots> usable = table_.Usable(now);
  // No worker on a host before its check passed.
  usable.erase(std::remove_if(usable.begin(), usable.end(),
                              [&](const HostSlots& host) {
                                return !HostReady(host.host);
                              }),
               usable.end());
  // Hosts with a worker holding the committed state first, so that rank 0,
  // which every other rank syncs from, holds it.
  std::set<std::string> holder_hosts;
  for (WorkerId id : holders_) {
    const Worker& w = workers_.at(id);
    if (w.active()) holder_hosts.insert(w.host);
  }
  std::stable_partition(usable.begin(), usable.end(), [&](const auto& host) {
    return holder_hosts.count(host.host) != 0;
  });
  // Looked up per slot of every usable host: one pass over the workers,
  // not one per slot (a hundred thousand discovered hosts).
  const std::map<std::string, const Worker*> active = ActiveBySlot();
  auto running_in = [&](const std::string& slot) -> const Worker* {
    auto at = active.find(slot);
    return at == active.end() ? nullptr : at->second;
  };
  std::vector<SlotGroup> groups;
  int total = 0;
  for (const HostSlots& host : usable) {
    SlotGroup group{host.host, UsableSlotsOf(host, now, also_out, active)};
    if (group.indices.empty()) continue;
    total += static_cast<int>(group.indices.size());
    auto holds = [&](int index) {
      const Worker* w = running_in(rendezvous::SlotName(host.host, index));
      return w != nullptr && IsHolder(*w);
    };
    auto first_holder =
        std::find_if(group.indices.begin(), group.indices.end(), holds);
    if (!groups.empty() || first_holder == group.indices.end() ||
        first_holder == group.indices.begin()) {
      groups.push_back(std::move(group));
      continue;
    }
    // Rank 0's host begins with slots that hold nothing (a new worker in
    // slot 0 after its cooldown): its holders lead as a group of their own
    // and those slots follow as another, each new worker still at its
    // index. A new slot above the first holder waits for a later
    // generation (then slot 0 holds the state too).
    SlotGroup leading{host.host, {}}, following{host.host, {}};
    for (int index : group.indices) {
      if (index < *first_holder) {
        following.indices.push_back(index);
      } else if (running_in(rendezvous::SlotName(host.host, index))) {
        leading.indices.push_back(index);
      } else {
        --total;
      }
    }
    groups.push_back(std::move(leading));
    groups.push_back(std::move(following));
  }
  if (config_.max_np > 0) total = std::min(total, config_.max_np);
  if (total == 0) return {};
  auto ranks = AssignSlots(groups, total);
  return ranks.ok() ? *ranks : std::vector<SlotAssignment>{};
}

bool JobPolicy::MembershipChanged(TimePoint now) const {
  // The slots, not their ranks: a new order alone is no cause for a reset.
  std::set<std::string> would_be;
  for (const SlotAssignment& slot : WouldBeSlots(now)) {
    would_be.insert(SlotNameOf(slot));
  }
  std::set<std::string> planned;
  for (const auto& [name, a] : plan_.slots) planned.insert(name);
  return would_be != planned;
}

}  // namespace hvd::launcher
