#include "leader/leadership_policy.h"

#include <algorithm>
#include <utility>

#include "hvd/common/logging.h"

namespace hvd::launcher {

using namespace leader_events;

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

LeaderAction Act(LeaderAction::Kind kind, int64_t lease = 0,
                 int64_t revision = 0, std::string reason = {}) {
  return LeaderAction{kind, lease, revision, std::move(reason)};
}

}  // namespace

LeadershipPolicy::LeadershipPolicy(LeadershipSettings settings)
    : settings_(settings) {}

void LeadershipPolicy::StepDown(const std::string& reason,
                                std::vector<LeaderAction>* out) {
  if (role_ == LeaderRole::kLeader) {
    out->push_back(
        Act(LeaderAction::Kind::kStepDown, lease_, revision_, reason));
  }
  role_ = LeaderRole::kStandby;
  revision_ = 0;
  // A new lease: the old one may still hold the leader key until it
  // expires (the shell revokes it where etcd answers).
  lease_ = 0;
}

std::vector<LeaderAction> LeadershipPolicy::Step(Time now) {
  std::vector<LeaderAction> out;
  if (role_ == LeaderRole::kLeader && now >= sure_until_) {
    StepDown("it could not renew its lease of " +
                 common::DecimalSeconds(settings_.lease) +
                 " s in time (etcd unreachable from here, or this host cut "
                 "off): a standby may lead by now",
             &out);
  }
  if (asked_) return out;
  if (lease_ == 0) {
    if (now >= next_grant_) {
      asked_ = true;
      out.push_back(Act(LeaderAction::Kind::kGrantLease));
    }
    return out;
  }
  if (now >= next_renew_) {
    asked_ = true;
    out.push_back(Act(LeaderAction::Kind::kRenew, lease_));
  } else if (role_ == LeaderRole::kStandby && now >= next_campaign_) {
    asked_ = true;
    out.push_back(Act(LeaderAction::Kind::kCampaign, lease_));
  }
  return out;
}

std::vector<LeaderAction> LeadershipPolicy::OnEvent(Time now,
                                                    const LeaderEvent& event) {
  const auto drift = settings_.lease / 10;
  std::vector<LeaderAction> out;
  std::visit(
      Overloaded{
          [&](const Tick&) {},
          [&](const LeaseGranted& e) {
            asked_ = false;
            lease_ = e.lease;
            lease_alive_until_ = e.sent + e.ttl;
            next_renew_ = e.sent + e.ttl / 3;
            next_campaign_ = now;
          },
          [&](const LeaseRefused&) {
            asked_ = false;
            next_grant_ = now + settings_.poll;
          },
          [&](const Campaigned& e) {
            asked_ = false;
            next_campaign_ = now + settings_.poll;
            if (e.outcome == Campaigned::Outcome::kWon) {
              role_ = LeaderRole::kLeader;
              revision_ = e.revision;
              holder_.clear();
              sure_until_ = lease_alive_until_ - drift;
              out.push_back(Act(LeaderAction::Kind::kLead, lease_, revision_));
            } else if (e.outcome == Campaigned::Outcome::kLost) {
              holder_ = e.holder;
            }
          },
          [&](const Renewed& e) {
            asked_ = false;
            switch (e.outcome) {
              case Renewed::Outcome::kRenewed:
                lease_alive_until_ = e.sent + e.ttl;
                if (role_ == LeaderRole::kLeader) {
                  sure_until_ = lease_alive_until_ - drift;
                }
                next_renew_ = e.sent + settings_.lease / 3;
                break;
              case Renewed::Outcome::kExpired:
                StepDown("etcd says its lease has expired", &out);
                break;
              case Renewed::Outcome::kUnreachable:
                next_renew_ = now + std::min(settings_.poll, drift);
                break;
            }
          },
          [&](const WriteFenced&) {
            StepDown(
                "a write was fenced: the leader key is not its own "
                "any more",
                &out);
          },
      },
      event);
  for (LeaderAction& action : Step(now)) out.push_back(std::move(action));
  return out;
}

LeadershipPolicy::Time LeadershipPolicy::NextDeadline() const {
  if (asked_) {
    // An answer is awaited; only a leader's certainty runs out meanwhile.
    return role_ == LeaderRole::kLeader ? sure_until_ : Time::max();
  }
  if (lease_ == 0) return next_grant_;
  Time next = next_renew_;
  next = std::min(next,
                  role_ == LeaderRole::kLeader ? sure_until_ : next_campaign_);
  return next;
}

}  // namespace hvd::launcher
