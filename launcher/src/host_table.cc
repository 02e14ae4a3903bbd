#include "host_table.h"

#include <algorithm>

namespace hvd::launcher {

HostTable::HostTable(std::optional<CooldownRange> cooldown)
    : cooldown_(cooldown) {}

void HostTable::Update(const std::vector<HostSlots>& listed) {
  for (Entry& entry : entries_) entry.listed = false;
  for (const HostSlots& host : listed) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.host == host.host; });
    if (it == entries_.end()) {
      entries_.push_back(Entry{host.host, host.slots, true, 0, std::nullopt});
    } else {
      it->slots = host.slots;
      it->listed = true;
    }
  }
}

void HostTable::Blacklist(const std::string& host, Clock::time_point now) {
  for (Entry& entry : entries_) {
    if (entry.host != host) continue;
    ++entry.times_blacklisted;
    if (cooldown_) {
      // min * 2^(n-1), capped at max; the shift is capped to stay defined.
      int shift = std::min(entry.times_blacklisted - 1, 30);
      auto delay =
          std::min(cooldown_->max, cooldown_->min * (int64_t(1) << shift));
      entry.blacklisted_until = now + delay;
    } else {
      entry.blacklisted_until.reset();
    }
  }
}

const HostTable::Entry* HostTable::Find(const std::string& host) const {
  for (const Entry& entry : entries_) {
    if (entry.host == host) return &entry;
  }
  return nullptr;
}

bool HostTable::IsBlacklisted(const std::string& host,
                              Clock::time_point now) const {
  const Entry* entry = Find(host);
  if (entry == nullptr || entry->times_blacklisted == 0) return false;
  return !entry->blacklisted_until || now < *entry->blacklisted_until;
}

std::vector<HostSlots> HostTable::Usable(Clock::time_point now) const {
  std::vector<HostSlots> usable;
  for (const Entry& entry : entries_) {
    if (entry.listed && !IsBlacklisted(entry.host, now)) {
      usable.push_back({entry.host, entry.slots});
    }
  }
  return usable;
}

std::vector<std::string> HostTable::Blacklisted(Clock::time_point now) const {
  std::vector<std::string> hosts;
  for (const Entry& entry : entries_) {
    if (entry.listed && IsBlacklisted(entry.host, now)) {
      hosts.push_back(entry.host);
    }
  }
  return hosts;
}

std::optional<HostTable::Clock::time_point> HostTable::NextCooldownEnd(
    Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const Entry& entry : entries_) {
    if (entry.listed && entry.blacklisted_until &&
        *entry.blacklisted_until > now &&
        (!next || *entry.blacklisted_until < *next)) {
      next = entry.blacklisted_until;
    }
  }
  return next;
}

std::vector<HostTable::Row> HostTable::Rows(Clock::time_point now) const {
  std::vector<Row> rows;
  for (const Entry& entry : entries_) {
    Row row{entry.host, entry.slots,  entry.listed,
            false,      std::nullopt, entry.times_blacklisted};
    row.blacklisted = IsBlacklisted(entry.host, now);
    if (row.blacklisted) row.usable_again = entry.blacklisted_until;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace hvd::launcher
