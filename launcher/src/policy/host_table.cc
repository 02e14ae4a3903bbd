#include "policy/host_table.h"

#include <algorithm>
#include <utility>

namespace hvd::launcher {

HostTable::HostTable(std::optional<CooldownRange> cooldown)
    : cooldown_(cooldown) {}

bool HostTable::Update(const std::vector<HostSlots>& listed) {
  std::vector<bool> was_listed;
  for (Entry& entry : entries_) {
    was_listed.push_back(entry.listed);
    entry.listed = false;
  }
  bool changed = false;
  for (const HostSlots& host : listed) {
    auto [at, added] = index_.emplace(host.host, entries_.size());
    if (added) {
      entries_.push_back(Entry{host.host, host.slots, true, {}, {}});
      changed = true;
    } else {
      Entry& entry = entries_[at->second];
      changed |= entry.slots != host.slots;
      entry.slots = host.slots;
      entry.listed = true;
    }
  }
  for (size_t i = 0; i < was_listed.size(); ++i) {
    changed |= was_listed[i] != entries_[i].listed;
  }
  return changed;
}

void HostTable::Extend(Blacklisting& blacklisting,
                       Clock::time_point now) const {
  ++blacklisting.times;
  if (cooldown_) {
    // min * 2^(n-1), capped at max; the shift is capped to stay defined.
    int shift = std::min(blacklisting.times - 1, 30);
    auto delay =
        std::min(cooldown_->max, cooldown_->min * (int64_t(1) << shift));
    blacklisting.until = now + delay;
  } else {
    blacklisting.until.reset();
  }
}

void HostTable::Blacklist(const std::string& host, Clock::time_point now) {
  if (Entry* entry = Find(host)) Extend(entry->blacklisting, now);
}

std::optional<HostTable::Clock::duration> HostTable::BlacklistSlot(
    const std::string& host, int index, Clock::time_point now) {
  Entry* entry = Find(host);
  if (entry == nullptr) return std::nullopt;
  Blacklisting& slot = entry->slots_out[index];
  Extend(slot, now);
  if (slot.until) return *slot.until - now;
  return std::nullopt;
}

int HostTable::TimesBlacklisted(const std::string& host) const {
  const Entry* entry = Find(host);
  return entry == nullptr ? 0 : entry->blacklisting.times;
}

std::set<int> HostTable::SlotsOut(const std::string& host,
                                  Clock::time_point now) const {
  std::set<int> out;
  if (const Entry* entry = Find(host)) {
    for (const auto& [index, blacklisting] : entry->slots_out) {
      if (blacklisting.Holds(now)) out.insert(index);
    }
  }
  return out;
}

const HostTable::Entry* HostTable::Find(const std::string& host) const {
  auto at = index_.find(host);
  return at == index_.end() ? nullptr : &entries_[at->second];
}

HostTable::Entry* HostTable::Find(const std::string& host) {
  return const_cast<Entry*>(std::as_const(*this).Find(host));
}

bool HostTable::IsBlacklisted(const std::string& host,
                              Clock::time_point now) const {
  const Entry* entry = Find(host);
  return entry != nullptr && entry->blacklisting.Holds(now);
}

std::vector<HostSlots> HostTable::Usable(Clock::time_point now) const {
  std::vector<HostSlots> usable;
  for (const Entry& entry : entries_) {
    if (entry.listed && !entry.blacklisting.Holds(now)) {
      usable.push_back({entry.host, entry.slots});
    }
  }
  return usable;
}

std::vector<std::string> HostTable::Blacklisted(Clock::time_point now) const {
  std::vector<std::string> hosts;
  for (const Entry& entry : entries_) {
    if (entry.listed && entry.blacklisting.Holds(now)) {
      hosts.push_back(entry.host);
    }
  }
  return hosts;
}

std::optional<HostTable::Clock::time_point> HostTable::NextCooldownEnd(
    Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  auto consider = [&](const Blacklisting& blacklisting) {
    if (blacklisting.until && *blacklisting.until > now &&
        (!next || *blacklisting.until < *next)) {
      next = blacklisting.until;
    }
  };
  for (const Entry& entry : entries_) {
    if (!entry.listed) continue;
    consider(entry.blacklisting);
    for (const auto& [index, blacklisting] : entry.slots_out) {
      consider(blacklisting);
    }
  }
  return next;
}

bool HostTable::HostCooldownEnds(Clock::time_point after,
                                 Clock::time_point until) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.listed && e.blacklisting.until && *e.blacklisting.until > after &&
           *e.blacklisting.until <= until;
  });
}

std::vector<HostTable::Row> HostTable::Rows(Clock::time_point now) const {
  std::vector<Row> rows;
  for (const Entry& entry : entries_) {
    Row row{entry.host, entry.slots,  entry.listed,
            false,      std::nullopt, entry.blacklisting.times};
    row.blacklisted = entry.blacklisting.Holds(now);
    if (row.blacklisted) row.usable_again = entry.blacklisting.until;
    rows.push_back(std::move(row));
  }
  return rows;
}

int64_t WallClockAnchor::WallMs(
    std::chrono::steady_clock::time_point at) const {
  return wall_ms +
         std::chrono::duration_cast<std::chrono::milliseconds>(at - steady)
             .count();
}

std::chrono::steady_clock::time_point WallClockAnchor::Steady(
    int64_t at_wall_ms) const {
  return steady + std::chrono::milliseconds(at_wall_ms - wall_ms);
}

std::vector<HostTable::SavedHost> HostTable::Save(
    const WallClockAnchor& clock) const {
  auto save = [&](const Blacklisting& b) {
    SavedBlacklisting saved{b.times, std::nullopt};
    if (b.until) saved.until_ms = clock.WallMs(*b.until);
    return saved;
  };
  std::vector<SavedHost> hosts;
  for (const Entry& entry : entries_) {
    SavedHost host{
        entry.host, entry.slots, entry.listed, save(entry.blacklisting), {}};
    for (const auto& [index, out] : entry.slots_out) {
      host.slots_out[index] = save(out);
    }
    hosts.push_back(std::move(host));
  }
  return hosts;
}

HostTable HostTable::Restore(std::optional<CooldownRange> cooldown,
                             const std::vector<SavedHost>& hosts,
                             const WallClockAnchor& clock) {
  auto restore = [&](const SavedBlacklisting& saved) {
    Blacklisting b{saved.times, std::nullopt};
    if (saved.until_ms) b.until = clock.Steady(*saved.until_ms);
    return b;
  };
  HostTable table(cooldown);
  for (const SavedHost& saved : hosts) {
    Entry entry{
        saved.host, saved.slots, saved.listed, restore(saved.blacklisting), {}};
    for (const auto& [index, out] : saved.slots_out) {
      entry.slots_out[index] = restore(out);
    }
    // A saved table lists each host once; a second entry of a name would
    // be unreachable by it, so it is dropped.
    if (!table.index_.emplace(entry.host, table.entries_.size()).second) {
      continue;
    }
    table.entries_.push_back(std::move(entry));
  }
  return table;
}

}  // namespace hvd::launcher
