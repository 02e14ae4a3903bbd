// LeadershipPolicy: when an hvdrun takes a lease, campaigns to lead a job,
// renews its lease, and stops leading, as a pure function of its state,
// the time and one event (the I/O shell: etcd_leadership.h).
//
// The rules, which tests/launcher/leadership_policy_test.cc pins down:
// - Every hvdrun holds a lease of `lease` (leader or standby) and renews it
//   every third of it; a renewal that finds it expired takes a new one.
// - A standby campaigns every `poll`: a transaction that creates the
//   leader key with its lease if there is none. Whoever creates it leads;
//   the key goes when its lease expires, so a standby takes over at most
//   lease + poll after a leader stopped renewing.
// - A leader is sure it leads until the lease it last renewed could have
//   expired: the time that renewal was *sent* plus the TTL etcd granted
//   (etcd counts from when it received it, later). Past that, less a
//   tenth of the lease for the clocks' drift, it steps down: its side
//   effects stop before any standby can lead. It steps down at once when
//   a renewal finds the lease expired or a fenced write is refused.
// - A leader that stepped down is a standby again with a new lease.
//
// Not thread-safe: one thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace hvd::launcher {

struct LeadershipSettings {
  std::chrono::milliseconds lease{5000};  // --leader-lease-seconds
  std::chrono::milliseconds poll{500};    // a standby's campaign interval
};

enum class LeaderRole { kStandby, kLeader };

namespace leader_events {
using Time = std::chrono::steady_clock::time_point;
struct Tick {};
// A lease was granted (or could not be: etcd unreachable).
struct LeaseGranted {
  int64_t lease = 0;
  Time sent;
  std::chrono::milliseconds ttl{0};
};
struct LeaseRefused {};
// The answer to a campaign sent at `sent`: won (the key is ours, created at
// `revision`) or lost to `holder`; unreachable when etcd did not answer.
struct Campaigned {
  enum class Outcome { kWon, kLost, kUnreachable };
  Outcome outcome = Outcome::kUnreachable;
  Time sent;
  int64_t revision = 0;
  std::string holder;
};
// The answer to a renewal sent at `sent`.
struct Renewed {
  enum class Outcome { kRenewed, kExpired, kUnreachable };
  Outcome outcome = Outcome::kUnreachable;
  Time sent;
  std::chrono::milliseconds ttl{0};
};
// A fenced write was refused: the leader key is no longer ours.
struct WriteFenced {};
}  // namespace leader_events

using LeaderEvent =
    std::variant<leader_events::Tick, leader_events::LeaseGranted,
                 leader_events::LeaseRefused, leader_events::Campaigned,
                 leader_events::Renewed, leader_events::WriteFenced>;

struct LeaderAction {
  enum class Kind {
    kGrantLease,  // ask etcd for a lease of `lease`
    kCampaign,    // create the leader key with the lease, if absent
    kRenew,       // keep the lease alive
    kLead,        // this hvdrun leads from now on (revision: its key's)
    kStepDown,    // stop every side effect now; `reason` says why
  };
  Kind kind;
  int64_t lease = 0;     // kCampaign, kRenew
  int64_t revision = 0;  // kLead
  std::string reason;    // kStepDown
};

class LeadershipPolicy {
 public:
  using Time = leader_events::Time;
  explicit LeadershipPolicy(LeadershipSettings settings);

  std::vector<LeaderAction> OnEvent(Time now, const LeaderEvent& event);
  // The next time OnEvent(Tick) has something to do.
  Time NextDeadline() const;

  LeaderRole role() const { return role_; }
  int64_t lease() const { return lease_; }
  // The leader key's creation revision while leading (the fence).
  int64_t revision() const { return revision_; }
  // Until when a leader is sure it leads.
  Time sure_until() const { return sure_until_; }
  const std::string& holder() const { return holder_; }

 private:
  std::vector<LeaderAction> Step(Time now);
  void StepDown(const std::string& reason, std::vector<LeaderAction>* out);

  const LeadershipSettings settings_;
  LeaderRole role_ = LeaderRole::kStandby;
  int64_t lease_ = 0;
  int64_t revision_ = 0;
  std::string holder_;        // the leader a lost campaign saw
  bool asked_ = false;        // a grant, campaign or renewal is in flight
  Time next_grant_{};         // after a refused grant
  Time lease_alive_until_{};  // sent + ttl of the last grant or renewal
  Time sure_until_{};
  Time next_renew_{};
  Time next_campaign_{};
};

}  // namespace hvd::launcher
