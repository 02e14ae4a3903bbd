// LeadershipPolicy with synthetic times: the lease, campaigns, renewals,
// and the moment a leader stops being sure it leads; then two hvdruns
// against a simulated etcd (leases that expire when etcd says so), one of
// which stops when its host dies.
#include "leader/leadership_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;
using namespace leader_events;
using Kind = LeaderAction::Kind;
using Time = LeadershipPolicy::Time;

const Time kT0 = Time() + 1000s;

LeadershipSettings Settings() {
  LeadershipSettings s;
  s.lease = 5000ms;
  s.poll = 500ms;
  return s;
}

std::vector<Kind> Kinds(const std::vector<LeaderAction>& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) out.push_back(a.kind);
  return out;
}

// A policy led to leadership at kT0: lease 7 granted (5 s), campaign won at
// revision 42.
LeadershipPolicy Leader() {
  LeadershipPolicy p(Settings());
  EXPECT_EQ(Kinds(p.OnEvent(kT0, Tick{})),
            std::vector<Kind>{Kind::kGrantLease});
  EXPECT_EQ(Kinds(p.OnEvent(kT0, LeaseGranted{7, kT0, 5000ms})),
            std::vector<Kind>{Kind::kCampaign});
  Campaigned won;
  won.outcome = Campaigned::Outcome::kWon;
  won.sent = kT0;
  won.revision = 42;
  auto lead = p.OnEvent(kT0, won);
  EXPECT_EQ(Kinds(lead), std::vector<Kind>{Kind::kLead});
  EXPECT_EQ(lead.at(0).revision, 42);
  return p;
}

TEST(LeadershipPolicyTest, ALeaseThenACampaignThatWinsLeads) {
  LeadershipPolicy p = Leader();
  EXPECT_EQ(p.role(), LeaderRole::kLeader);
  EXPECT_EQ(p.lease(), 7);
  EXPECT_EQ(p.revision(), 42);
  // Sure until the granted lease could have run out, less a tenth of it.
  EXPECT_EQ(p.sure_until(), kT0 + 4500ms);
}

TEST(LeadershipPolicyTest, ALeaderRenewsEveryThirdOfTheLease) {
  LeadershipPolicy p = Leader();
  const Time renew = kT0 + 5000ms / 3;
  EXPECT_EQ(p.NextDeadline(), renew);
  EXPECT_TRUE(p.OnEvent(renew - 1ms, Tick{}).empty());
  auto asked = p.OnEvent(renew, Tick{});
  ASSERT_EQ(Kinds(asked), std::vector<Kind>{Kind::kRenew});
  EXPECT_EQ(asked[0].lease, 7);
  // Nothing more while the answer is awaited.
  EXPECT_TRUE(p.OnEvent(renew + 100ms, Tick{}).empty());
  Renewed ok;
  ok.outcome = Renewed::Outcome::kRenewed;
  ok.sent = renew;
  ok.ttl = 5000ms;
  EXPECT_TRUE(p.OnEvent(renew + 200ms, ok).empty());
  EXPECT_EQ(p.sure_until(), renew + 4500ms);
  EXPECT_EQ(p.NextDeadline(), renew + 5000ms / 3);
}

TEST(LeadershipPolicyTest, ALeaderCutOffFromEtcdStepsDownBeforeItsLeaseEnds) {
  LeadershipPolicy p = Leader();
  Renewed lost;
  lost.outcome = Renewed::Outcome::kUnreachable;
  Time now = kT0;
  // Renewals go unanswered; it keeps trying, and leads until 4.5 s.
  while (now < kT0 + 4500ms) {
    ASSERT_EQ(p.role(), LeaderRole::kLeader) << (now - kT0).count();
    auto actions = p.OnEvent(now, Tick{});
    for (const auto& a : actions) {
      ASSERT_NE(a.kind, Kind::kStepDown) << (now - kT0).count();
      if (a.kind == Kind::kRenew) {
        lost.sent = now;
        p.OnEvent(now, lost);
      }
    }
    now = std::max(now + 1ms, std::min(p.NextDeadline(), kT0 + 4500ms));
  }
  auto down = p.OnEvent(kT0 + 4500ms, Tick{});
  ASSERT_FALSE(down.empty());
  EXPECT_EQ(down[0].kind, Kind::kStepDown);
  EXPECT_NE(down[0].reason.find("a standby may lead"), std::string::npos)
      << down[0].reason;
  EXPECT_EQ(p.role(), LeaderRole::kStandby);
  // A standby again, with a new lease.
  EXPECT_EQ(Kinds(down),
            (std::vector<Kind>{Kind::kStepDown, Kind::kGrantLease}));
}

TEST(LeadershipPolicyTest, AnExpiredLeaseOrAFencedWriteEndsLeadershipAtOnce) {
  LeadershipPolicy p = Leader();
  Renewed expired;
  expired.outcome = Renewed::Outcome::kExpired;
  expired.sent = kT0 + 1s;
  p.OnEvent(kT0 + 1s, Tick{});
  auto down = p.OnEvent(kT0 + 1s, expired);
  EXPECT_EQ(Kinds(down),
            (std::vector<Kind>{Kind::kStepDown, Kind::kGrantLease}));
  EXPECT_EQ(p.role(), LeaderRole::kStandby);

  LeadershipPolicy q = Leader();
  auto fenced = q.OnEvent(kT0 + 1s, WriteFenced{});
  ASSERT_FALSE(fenced.empty());
  EXPECT_EQ(fenced[0].kind, Kind::kStepDown);
  EXPECT_NE(fenced[0].reason.find("fenced"), std::string::npos);
  EXPECT_EQ(q.role(), LeaderRole::kStandby);
}

TEST(LeadershipPolicyTest, AStandbyCampaignsEveryPollAndRenewsItsLease) {
  LeadershipPolicy p(Settings());
  p.OnEvent(kT0, Tick{});
  p.OnEvent(kT0, LeaseGranted{9, kT0, 5000ms});
  Campaigned lost;
  lost.outcome = Campaigned::Outcome::kLost;
  lost.sent = kT0;
  lost.holder = "hvdrun on host-a";
  EXPECT_TRUE(p.OnEvent(kT0, lost).empty());
  EXPECT_EQ(p.holder(), "hvdrun on host-a");
  EXPECT_EQ(p.NextDeadline(), kT0 + 500ms);
  EXPECT_TRUE(p.OnEvent(kT0 + 499ms, Tick{}).empty());
  EXPECT_EQ(Kinds(p.OnEvent(kT0 + 500ms, Tick{})),
            std::vector<Kind>{Kind::kCampaign});
  p.OnEvent(kT0 + 500ms, lost);
  // Its own lease is renewed too, so that it is alive when it wins.
  Time renew = kT0 + 5000ms / 3;
  Time now = kT0 + 500ms;
  bool renewed = false;
  while (now <= renew && !renewed) {
    now = p.NextDeadline();
    for (const auto& a : p.OnEvent(now, Tick{})) {
      if (a.kind == Kind::kRenew) renewed = true;
      if (a.kind == Kind::kCampaign) p.OnEvent(now, lost);
    }
  }
  EXPECT_TRUE(renewed);
  EXPECT_EQ(now, renew);
}

TEST(LeadershipPolicyTest, ARefusedGrantIsAskedAgainAfterAPoll) {
  LeadershipPolicy p(Settings());
  p.OnEvent(kT0, Tick{});
  EXPECT_TRUE(p.OnEvent(kT0, LeaseRefused{}).empty());
  EXPECT_EQ(p.NextDeadline(), kT0 + 500ms);
  EXPECT_EQ(Kinds(p.OnEvent(kT0 + 500ms, Tick{})),
            std::vector<Kind>{Kind::kGrantLease});
}

// etcd as the policies see it: leases that expire `ttl` after etcd last
// heard of them, and a leader key that goes with its lease.
class SimulatedEtcd {
 public:
  int64_t Grant(Time now) {
    leases_[++next_lease_] = now + 5000ms;
    return next_lease_;
  }
  bool Renew(Time now, int64_t lease) {
    Expire(now);
    auto it = leases_.find(lease);
    if (it == leases_.end()) return false;
    it->second = now + 5000ms;
    return true;
  }
  std::optional<int64_t> Campaign(Time now, int64_t lease) {
    Expire(now);
    if (holder_ != 0 || leases_.count(lease) == 0) return std::nullopt;
    holder_ = lease;
    return ++revision_;
  }

 private:
  void Expire(Time now) {
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (it->second <= now) {
        if (holder_ == it->first) holder_ = 0;
        it = leases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::map<int64_t, Time> leases_;
  int64_t next_lease_ = 0;
  int64_t holder_ = 0;
  int64_t revision_ = 100;
};

// Carries out a policy's actions against the simulated etcd at once (as
// the shell does, with answers taking no time).
void Carry(LeadershipPolicy& p, SimulatedEtcd& etcd, Time now,
           std::vector<LeaderAction> actions, std::vector<Kind>* seen) {
  while (!actions.empty()) {
    LeaderAction a = actions.front();
    actions.erase(actions.begin());
    seen->push_back(a.kind);
    std::vector<LeaderAction> more;
    if (a.kind == Kind::kGrantLease) {
      more = p.OnEvent(now, LeaseGranted{etcd.Grant(now), now, 5000ms});
    } else if (a.kind == Kind::kRenew) {
      Renewed r;
      r.sent = now;
      r.ttl = 5000ms;
      r.outcome = etcd.Renew(now, a.lease) ? Renewed::Outcome::kRenewed
                                           : Renewed::Outcome::kExpired;
      more = p.OnEvent(now, r);
    } else if (a.kind == Kind::kCampaign) {
      Campaigned c;
      c.sent = now;
      auto won = etcd.Campaign(now, a.lease);
      c.outcome = won ? Campaigned::Outcome::kWon : Campaigned::Outcome::kLost;
      c.revision = won.value_or(0);
      more = p.OnEvent(now, c);
    }
    actions.insert(actions.end(), more.begin(), more.end());
  }
}

TEST(LeadershipPolicyTest, AStandbyTakesOverWithinALeaseAndAPollNeverBefore) {
  SimulatedEtcd etcd;
  LeadershipPolicy a(Settings()), b(Settings());
  std::vector<Kind> seen_a, seen_b;
  Carry(a, etcd, kT0, a.OnEvent(kT0, Tick{}), &seen_a);
  Carry(b, etcd, kT0 + 10ms, b.OnEvent(kT0 + 10ms, Tick{}), &seen_b);
  ASSERT_EQ(a.role(), LeaderRole::kLeader);
  ASSERT_EQ(b.role(), LeaderRole::kStandby);
  // Both run for 30 s; a's host dies at 12 s (a gets no more events).
  const Time death = kT0 + 12s;
  Time a_last_sure = a.sure_until();
  std::optional<Time> b_leads;
  for (Time now = kT0 + 20ms; now < kT0 + 30s; now += 10ms) {
    if (now < death) {
      Carry(a, etcd, now, a.OnEvent(now, Tick{}), &seen_a);
      if (a.role() == LeaderRole::kLeader) a_last_sure = a.sure_until();
    }
    Carry(b, etcd, now, b.OnEvent(now, Tick{}), &seen_b);
    if (!b_leads && b.role() == LeaderRole::kLeader) b_leads = now;
    // Until its death, a leads throughout and b never does.
    if (now < death) {
      ASSERT_EQ(a.role(), LeaderRole::kLeader) << (now - kT0).count();
      ASSERT_EQ(b.role(), LeaderRole::kStandby) << (now - kT0).count();
    }
  }
  ASSERT_TRUE(b_leads.has_value());
  // b leads only after a could be sure of leading, and within a lease and
  // a poll of a's last renewal.
  EXPECT_GE(*b_leads, a_last_sure);
  EXPECT_LE(*b_leads, death + 5000ms + 500ms);
}

}  // namespace
}  // namespace hvd::launcher
