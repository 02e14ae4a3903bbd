// HostTable (elastic mode): every host discovery has ever listed, in the
// order first seen (that order makes rank 0 the oldest surviving slot), its
// slots, whether discovery lists it now, and its blacklist state.
//
// A host is blacklisted when one of its workers fails. Without a cooldown
// range that is for the rest of the job. With --blacklist-cooldown-range
// MIN MAX, its n-th blacklisting lasts min(MAX, MIN * 2^(n-1)) seconds;
// afterwards it is usable again if discovery still lists it.
//
// One slot of a host ("host:index") can be out instead, when the job keeps
// the host (job_policy.h, "Slots"): the same cooldown, counted per slot.
//
// A host is found by name in O(log N), so that a discovery of N hosts
// (a hundred thousand, say) is applied and read in O(N log N).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "job/launch_config.h"

namespace hvd::launcher {

struct CooldownRange {
  std::chrono::seconds min{0};
  std::chrono::seconds max{0};
};

// Maps this process's steady clock to the wall clock and back, through
// one pair of readings taken together: a deadline written for another
// machine (DriverState) must be wall-clock time, and the same steady time
// must give the same wall time every time it is written.
struct WallClockAnchor {
  std::chrono::steady_clock::time_point steady;
  int64_t wall_ms = 0;  // milliseconds since the Unix epoch at `steady`
  int64_t WallMs(std::chrono::steady_clock::time_point at) const;
  std::chrono::steady_clock::time_point Steady(int64_t at_wall_ms) const;
};

class HostTable {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HostTable(std::optional<CooldownRange> cooldown);

  // Applies one discovery result: hosts new to the table are appended,
  // listed hosts take the listed slot counts, the others are not listed.
  // Returns whether anything changed: a host or a slot count.
  bool Update(const std::vector<HostSlots>& listed);
  void Blacklist(const std::string& host, Clock::time_point now);
  // Takes slot `index` of `host` out; returns how long (nullopt: for good).
  std::optional<Clock::duration> BlacklistSlot(const std::string& host,
                                               int index,
                                               Clock::time_point now);
  // How often `host` was blacklisted (0: never, or unknown).
  int TimesBlacklisted(const std::string& host) const;
  // The slots of `host` that are out at `now`.
  std::set<int> SlotsOut(const std::string& host, Clock::time_point now) const;

  // Hosts a generation may use at `now`: listed and not blacklisted, in
  // first-seen order.
  std::vector<HostSlots> Usable(Clock::time_point now) const;
  bool IsBlacklisted(const std::string& host, Clock::time_point now) const;
  // Listed hosts that are blacklisted at `now`.
  std::vector<std::string> Blacklisted(Clock::time_point now) const;
  // When the next blacklisted listed host, or slot out on a listed host,
  // becomes usable again, if ever.
  std::optional<Clock::time_point> NextCooldownEnd(Clock::time_point now) const;
  // Whether a listed host's cooldown (not only a slot's) ends in
  // (after, until].
  bool HostCooldownEnds(Clock::time_point after, Clock::time_point until) const;

  // Every host ever listed, in first-seen order, as the status page shows
  // it at `now`.
  struct Row {
    std::string host;
    int slots = 0;
    bool listed = false;  // discovery lists it now
    bool blacklisted = false;
    // With `blacklisted`: when it is usable again; nullopt: never.
    std::optional<Clock::time_point> usable_again;
    int times_blacklisted = 0;
  };
  std::vector<Row> Rows(Clock::time_point now) const;

  // The whole table as a new leader rebuilds it (DriverState), with its
  // deadlines as wall-clock times.
  struct SavedBlacklisting {
    int times = 0;
    // With times > 0: out until then; nullopt: for good.
    std::optional<int64_t> until_ms;
  };
  struct SavedHost {
    std::string host;
    int slots = 0;
    bool listed = false;
    SavedBlacklisting blacklisting;
    std::map<int, SavedBlacklisting> slots_out;  // by slot index
  };
  std::vector<SavedHost> Save(const WallClockAnchor& clock) const;
  static HostTable Restore(std::optional<CooldownRange> cooldown,
                           const std::vector<SavedHost>& hosts,
                           const WallClockAnchor& clock);

 private:
  // A host's, or one slot's, blacklisting.
  struct Blacklisting {
    int times = 0;
    // Out until then; nullopt with times > 0: for good.
    std::optional<Clock::time_point> until;
    bool Holds(Clock::time_point now) const {
      return times > 0 && (!until || now < *until);
    }
  };
  struct Entry {
    std::string host;
    int slots = 0;
    bool listed = false;
    Blacklisting blacklisting;
    std::map<int, Blacklisting> slots_out;  // by slot index
  };
  const Entry* Find(const std::string& host) const;
  Entry* Find(const std::string& host);
  // Counts one more blacklisting and sets its end.
  void Extend(Blacklisting& blacklisting, Clock::time_point now) const;

  std::optional<CooldownRange> cooldown_;
  std::vector<Entry> entries_;
  // Each host's place in entries_: a discovery of N hosts costs
  // O(N log N), not N scans of the table.
  std::map<std::string, size_t> index_;
};

}  // namespace hvd::launcher
