// One host and its slots, the one rule for every place they come from:
// -H, a hostfile, a discovery script's output and Slurm's node list. A host
// name is 1 to 253 letters, digits, '.', '-' and '_', not starting with
// '-' (it would read as an option where it is passed on); slots are a whole
// number in [1, kMaxSlotsPerHost]; a host listed twice is refused, with or
// without its slots.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

inline constexpr int kMaxSlotsPerHost = 4096;

// The hosts of one list, in order, each checked and none twice. Every error
// reads "<where> '<text>': <why>", naming the entry as its source gave it.
class HostListBuilder {
 public:
  // "host" (with `default_slots`) or "host:slots".
  common::Status Add(const std::string& text, int default_slots,
                     const std::string& where);
  // A host and slots given apart (Slurm's node list and its counts).
  common::Status Add(const HostSlots& host, const std::string& where);

  const std::vector<HostSlots>& hosts() const { return hosts_; }
  std::vector<HostSlots> Take() { return std::move(hosts_); }

 private:
  common::Status Admit(const HostSlots& host, const std::string& text,
                       const std::string& where);

  std::vector<HostSlots> hosts_;
  std::set<std::string> names_;  // a long discovered list stays n log n
};

// -H: "a:2,b,c:4"; a host without ":N" has one slot.
common::Result<std::vector<HostSlots>> ParseHostList(const std::string& text);

// --hostfile: lines "host", "host:N" or "host slots=N"; '#' starts a
// comment.
common::Result<std::vector<HostSlots>> ParseHostfile(const std::string& path);

}  // namespace hvd::launcher
