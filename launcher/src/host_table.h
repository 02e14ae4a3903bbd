// HostTable (elastic mode): every host discovery has ever listed, in the
// order first seen (that order makes rank 0 the oldest surviving slot), its
// slots, whether discovery lists it now, and its blacklist state.
//
// A host is blacklisted when one of its workers fails. Without a cooldown
// range that is for the rest of the job. With --blacklist-cooldown-range
// MIN MAX, its n-th blacklisting lasts min(MAX, MIN * 2^(n-1)) seconds;
// afterwards it is usable again if discovery still lists it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launch_config.h"

namespace hvd::launcher {

struct CooldownRange {
  std::chrono::seconds min{0};
  std::chrono::seconds max{0};
};

class HostTable {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HostTable(std::optional<CooldownRange> cooldown);

  // Applies one discovery result: hosts new to the table are appended,
  // listed hosts take the listed slot counts, the others are not listed.
  void Update(const std::vector<HostSlots>& listed);
  void Blacklist(const std::string& host, Clock::time_point now);

  // Hosts a generation may use at `now`: listed and not blacklisted, in
  // first-seen order.
  std::vector<HostSlots> Usable(Clock::time_point now) const;
  bool IsBlacklisted(const std::string& host, Clock::time_point now) const;
  // Listed hosts that are blacklisted at `now`.
  std::vector<std::string> Blacklisted(Clock::time_point now) const;
  // When the next blacklisted listed host becomes usable again, if ever.
  std::optional<Clock::time_point> NextCooldownEnd(Clock::time_point now) const;

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

 private:
  struct Entry {
    std::string host;
    int slots = 0;
    bool listed = false;
    int times_blacklisted = 0;
    // Blacklisted until then; nullopt with times_blacklisted > 0: forever.
    std::optional<Clock::time_point> blacklisted_until;
  };
  const Entry* Find(const std::string& host) const;

  std::optional<CooldownRange> cooldown_;
  std::vector<Entry> entries_;
};

}  // namespace hvd::launcher
