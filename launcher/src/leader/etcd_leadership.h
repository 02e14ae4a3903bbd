// EtcdLeadership: LeadershipPolicy's actions carried out on etcd, and the
// leader's fenced writes (the I/O shell of leadership_policy.h).
//
// The leader key is `<prefix>leader`, its value this hvdrun's identity,
// attached to its lease: a campaign is a transaction that creates it only
// if absent. A fenced write is a transaction that runs its operations only
// while the leader key still has the creation revision it had when this
// hvdrun won, so a deposed or partitioned leader cannot change the job,
// whatever it believes.
//
// Not thread-safe: the driver's thread owns it. Calls block on etcd, each
// within the client's deadline, which must be well under a third of the
// lease: a leader blocked in a call longer than that learns late that it
// must step down.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"
#include "leader/leadership_policy.h"

namespace hvd::launcher {

class EtcdLeadership {
 public:
  using Time = LeadershipPolicy::Time;
  EtcdLeadership(rendezvous::EtcdClient* etcd, std::string prefix,
                 std::string identity, LeadershipSettings settings);

  // Carries out whatever is due now; returns the kLead and kStepDown
  // notices among the actions, for the caller to act on.
  std::vector<LeaderAction> Poll();
  // When Poll has something to do next.
  Time NextDeadline() const { return policy_.NextDeadline(); }

  // Runs `ops` only while this hvdrun leads; kAborted when it does not, or
  // when etcd refused the write because another hvdrun leads now (the next
  // Poll then returns the kStepDown).
  common::Result<rendezvous::EtcdTxnResult> FencedWrite(
      const std::vector<rendezvous::EtcdOp>& ops);

  // Gives the lease back, which ends the lead at once (a standby need not
  // wait for it to expire); best effort, for an hvdrun that is done. No
  // fenced write follows: the job's keys are no longer this hvdrun's.
  void Resign();
  bool resigned() const { return resigned_; }

  const LeadershipPolicy& policy() const { return policy_; }
  const std::string& leader_key() const { return leader_key_; }

 private:
  // The answer to `action` as the policy's event.
  LeaderEvent Carry(const LeaderAction& action);
  void Feed(Time now, const LeaderEvent& event,
            std::vector<LeaderAction>* notices);

  rendezvous::EtcdClient* etcd_;
  const std::string leader_key_;
  const std::string identity_;
  const LeadershipSettings settings_;
  bool resigned_ = false;
  LeadershipPolicy policy_;
  std::vector<LeaderAction> pending_notices_;  // from fenced writes
};

}  // namespace hvd::launcher
