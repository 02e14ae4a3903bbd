#include "leader/etcd_leadership.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <variant>

namespace hvd::launcher {

using common::Result;
using common::Status;
using rendezvous::EtcdCompare;
using rendezvous::EtcdOp;
using rendezvous::EtcdTxnResult;
using namespace leader_events;

namespace {

std::chrono::steady_clock::time_point Now() {
  return std::chrono::steady_clock::now();
}

}  // namespace

EtcdLeadership::EtcdLeadership(rendezvous::EtcdClient* etcd, std::string prefix,
                               std::string identity,
                               LeadershipSettings settings)
    : etcd_(etcd),
      leader_key_(std::move(prefix) + "leader"),
      identity_(std::move(identity)),
      settings_(settings),
      policy_(settings) {}

LeaderEvent EtcdLeadership::Carry(const LeaderAction& action) {
  const Time sent = Now();
  switch (action.kind) {
    case LeaderAction::Kind::kGrantLease: {
      // etcd's leases are in whole seconds.
      const int64_t seconds =
          std::max<int64_t>(1, (settings_.lease.count() + 999) / 1000);
      auto lease = etcd_->GrantLease(seconds);
      if (!lease.ok()) return LeaseRefused{};
      return LeaseGranted{*lease, sent, std::chrono::seconds(seconds)};
    }
    case LeaderAction::Kind::kRenew: {
      auto ttl = etcd_->KeepAlive(action.lease);
      Renewed renewed;
      renewed.sent = sent;
      if (ttl.ok()) {
        renewed.outcome = Renewed::Outcome::kRenewed;
        renewed.ttl = std::chrono::seconds(*ttl);
      } else if (ttl.status().code() == common::Code::kNotFound) {
        renewed.outcome = Renewed::Outcome::kExpired;
      }
      return renewed;
    }
    case LeaderAction::Kind::kCampaign: {
      EtcdCompare absent;
      absent.key = leader_key_;
      absent.target = EtcdCompare::Target::kCreateRevision;
      absent.number = 0;
      EtcdOp claim;
      claim.kind = EtcdOp::Kind::kPut;
      claim.key = leader_key_;
      claim.value = identity_;
      claim.lease = action.lease;
      EtcdOp read;
      read.key = leader_key_;
      auto answer = etcd_->Txn({absent}, {claim}, {read});
      Campaigned campaigned;
      campaigned.sent = sent;
      if (!answer.ok()) return campaigned;
      // The key may be this hvdrun's own, from a lease it gave up while
      // etcd had no quorum: the revoke at the step down failed then, and
      // etcd's new raft leader renewed every lease when it took over. Give
      // that lease back and campaign again, rather than lose to itself.
      const std::vector<rendezvous::EtcdKeyValue>* held =
          answer->ranges.empty() ? nullptr : &answer->ranges[0];
      if (!answer->succeeded && held != nullptr && !held->empty() &&
          held->front().value == identity_ && held->front().lease != 0 &&
          held->front().lease != action.lease &&
          etcd_->RevokeLease(held->front().lease).ok()) {
        answer = etcd_->Txn({absent}, {claim}, {read});
        if (!answer.ok()) return campaigned;
      }
      if (answer->succeeded) {
        campaigned.outcome = Campaigned::Outcome::kWon;
        campaigned.revision = answer->revision;
      } else {
        campaigned.outcome = Campaigned::Outcome::kLost;
        if (!answer->ranges.empty() && !answer->ranges[0].empty()) {
          campaigned.holder = answer->ranges[0][0].value;
        }
      }
      return campaigned;
    }
    case LeaderAction::Kind::kStepDown:
      // Best effort: a standby takes over at once instead of after the
      // lease (etcd may well be out of reach: that is often why).
      if (action.lease != 0) (void)etcd_->RevokeLease(action.lease);
      return Tick{};
    case LeaderAction::Kind::kLead:
      break;
  }
  return Tick{};
}

void EtcdLeadership::Feed(Time now, const LeaderEvent& event,
                          std::vector<LeaderAction>* notices) {
  std::deque<LeaderAction> todo;
  for (LeaderAction& a : policy_.OnEvent(now, event)) todo.push_back(a);
  while (!todo.empty()) {
    LeaderAction action = std::move(todo.front());
    todo.pop_front();
    if (action.kind == LeaderAction::Kind::kLead ||
        action.kind == LeaderAction::Kind::kStepDown) {
      notices->push_back(action);
    }
    LeaderEvent answer = Carry(action);
    if (std::holds_alternative<Tick>(answer)) continue;
    for (LeaderAction& a : policy_.OnEvent(Now(), answer)) todo.push_back(a);
  }
}

std::vector<LeaderAction> EtcdLeadership::Poll() {
  std::vector<LeaderAction> notices = std::move(pending_notices_);
  pending_notices_.clear();
  Feed(Now(), Tick{}, &notices);
  return notices;
}

void EtcdLeadership::Resign() {
  resigned_ = true;
  if (policy_.lease() != 0) (void)etcd_->RevokeLease(policy_.lease());
}

Result<EtcdTxnResult> EtcdLeadership::FencedWrite(
    const std::vector<EtcdOp>& ops) {
  if (policy_.role() != LeaderRole::kLeader || resigned_) {
    return Status::Aborted("this hvdrun does not lead the job (" + leader_key_ +
                           " is not its own)");
  }
  EtcdCompare ours;
  ours.key = leader_key_;
  ours.target = EtcdCompare::Target::kCreateRevision;
  ours.number = policy_.revision();
  auto answer = etcd_->Txn({ours}, ops, {});
  if (!answer.ok()) return answer.status();
  if (!answer->succeeded) {
    Feed(Now(), WriteFenced{}, &pending_notices_);
    return Status::Aborted(
        "this hvdrun no longer leads the job: etcd refused its write (" +
        leader_key_ + " was created again by another hvdrun)");
  }
  return answer;
}

}  // namespace hvd::launcher
