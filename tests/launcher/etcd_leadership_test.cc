// EtcdLeadership on a real etcd member: two hvdruns of one job, exactly one
// leads; the standby takes over when the leader stops (its host died), and
// the old leader's writes are fenced off whatever it believes.
#include "leader/etcd_leadership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "etcd_member.h"

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;
using rendezvous::EtcdClient;
using rendezvous::EtcdOp;

// A lease of 2 s, and etcd calls bounded well under a third of it.
LeadershipSettings Fast() {
  LeadershipSettings s;
  s.lease = 2000ms;
  s.poll = 100ms;
  return s;
}

EtcdOp Put(const std::string& key, const std::string& value) {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kPut;
  op.key = key;
  op.value = value;
  return op;
}

class EtcdLeadershipTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(member_.Start()); }

  // Polls `who` until `done()` or 15 s; false on the deadline.
  template <class Done>
  bool PollUntil(std::vector<EtcdLeadership*> who, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      for (EtcdLeadership* one : who) {
        for (const LeaderAction& notice : one->Poll())
          notices_.push_back(notice);
      }
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  testing::EtcdMember member_;
  std::vector<LeaderAction> notices_;
};

TEST_F(EtcdLeadershipTest, OneOfTwoLeadsAndOnlyItsWritesLand) {
  EtcdClient etcd_a(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdClient etcd_b(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdLeadership a(&etcd_a, "/hvd/job-1/", "hvdrun a", Fast());
  EtcdLeadership b(&etcd_b, "/hvd/job-1/", "hvdrun b", Fast());
  ASSERT_TRUE(PollUntil({&a, &b}, [&] {
    return a.policy().role() == LeaderRole::kLeader ||
           b.policy().role() == LeaderRole::kLeader;
  }));
  // Both keep going for a while: the roles hold.
  for (int i = 0; i < 50; ++i) {
    a.Poll();
    b.Poll();
    std::this_thread::sleep_for(10ms);
  }
  const bool a_leads = a.policy().role() == LeaderRole::kLeader;
  EtcdLeadership& leader = a_leads ? a : b;
  EtcdLeadership& standby = a_leads ? b : a;
  ASSERT_EQ(standby.policy().role(), LeaderRole::kStandby);
  EXPECT_EQ(standby.policy().holder(), a_leads ? "hvdrun a" : "hvdrun b");
  ASSERT_TRUE(leader.FencedWrite({Put("/hvd/job-1/generation", "1")}).ok());
  auto refused = standby.FencedWrite({Put("/hvd/job-1/generation", "x")});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), common::Code::kAborted);
  EXPECT_EQ(etcd_a.Range("/hvd/job-1/generation")->at(0).value, "1");
}

TEST_F(EtcdLeadershipTest, AStandbyTakesOverAndTheOldLeaderIsFencedOff) {
  EtcdClient etcd_a(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdClient etcd_b(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdLeadership a(&etcd_a, "/hvd/job-2/", "hvdrun a", Fast());
  ASSERT_TRUE(PollUntil(
      {&a}, [&] { return a.policy().role() == LeaderRole::kLeader; }));
  EtcdLeadership b(&etcd_b, "/hvd/job-2/", "hvdrun b", Fast());
  ASSERT_TRUE(PollUntil({&a, &b}, [&] {
    return b.policy().role() == LeaderRole::kStandby &&
           !b.policy().holder().empty();
  }));
  // a's host dies: a is polled no more, and b leads once a's lease has
  // expired (leadership_policy_test bounds when, without a clock).
  ASSERT_TRUE(PollUntil(
      {&b}, [&] { return b.policy().role() == LeaderRole::kLeader; }));
  ASSERT_TRUE(b.FencedWrite({Put("/hvd/job-2/generation", "b")}).ok());
  // a comes back believing it leads: its write is refused by etcd, and it
  // steps down saying why.
  ASSERT_EQ(a.policy().role(), LeaderRole::kLeader);
  auto stale = a.FencedWrite({Put("/hvd/job-2/generation", "a")});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), common::Code::kAborted);
  auto notices = a.Poll();
  ASSERT_FALSE(notices.empty());
  EXPECT_EQ(notices[0].kind, LeaderAction::Kind::kStepDown);
  EXPECT_NE(notices[0].reason.find("fenced"), std::string::npos);
  EXPECT_EQ(a.policy().role(), LeaderRole::kStandby);
  EXPECT_EQ(etcd_b.Range("/hvd/job-2/generation")->at(0).value, "b");
}

// A leader that gives its lead back writes nothing more (a standby whose
// takeover failed must not delete the job's keys), and another hvdrun
// leads next.
TEST_F(EtcdLeadershipTest, AResignedLeaderWritesNothingMore) {
  EtcdClient etcd_a(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdClient etcd_b(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdLeadership a(&etcd_a, "/hvd/job-4/", "hvdrun a", Fast());
  ASSERT_TRUE(PollUntil(
      {&a}, [&] { return a.policy().role() == LeaderRole::kLeader; }));
  ASSERT_TRUE(a.FencedWrite({Put("/hvd/job-4/generation", "a")}).ok());
  EXPECT_FALSE(a.resigned());
  a.Resign();
  EXPECT_TRUE(a.resigned());
  auto after = a.FencedWrite({Put("/hvd/job-4/generation", "late")});
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), common::Code::kAborted);
  EtcdLeadership b(&etcd_b, "/hvd/job-4/", "hvdrun b", Fast());
  ASSERT_TRUE(PollUntil(
      {&b}, [&] { return b.policy().role() == LeaderRole::kLeader; }));
  EXPECT_EQ(etcd_b.Range("/hvd/job-4/generation")->at(0).value, "a");
}

// etcd without quorum for longer than the lease: the leader steps down,
// and its revoke fails. When the quorum is back, etcd's new raft leader
// renews every lease, so the leader key is still there, this hvdrun's own
// under its old lease. The hvdrun must lead again, not lose to itself.
TEST_F(EtcdLeadershipTest, ALeaderKeyLeftUnderItsOwnOldLeaseIsTakenBack) {
  EtcdClient etcd(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
  EtcdLeadership before(&etcd, "/hvd/job-3/", "hvdrun a", Fast());
  ASSERT_TRUE(PollUntil({&before}, [&] {
    return before.policy().role() == LeaderRole::kLeader;
  }));
  const int64_t old_lease = before.policy().lease();
  // The same hvdrun after its step down: a new lease, the old one kept
  // alive as etcd's renewal would.
  EtcdLeadership after(&etcd, "/hvd/job-3/", "hvdrun a", Fast());
  std::atomic<bool> renewing{true};
  std::thread renewer([&] {
    EtcdClient own(testing::EtcdOptionsFor({member_.client_port()}, 500ms));
    while (renewing) {
      (void)own.KeepAlive(old_lease);
      std::this_thread::sleep_for(100ms);
    }
  });
  const bool led = PollUntil(
      {&after}, [&] { return after.policy().role() == LeaderRole::kLeader; });
  renewing = false;
  renewer.join();
  ASSERT_TRUE(led) << "holder: " << after.policy().holder();
  EXPECT_NE(after.policy().lease(), old_lease);
  auto key = etcd.Range("/hvd/job-3/leader");
  ASSERT_TRUE(key.ok() && key->size() == 1u);
  EXPECT_EQ(key->front().lease, after.policy().lease());
}

}  // namespace
}  // namespace hvd::launcher
