// The admission rule of the control-plane servers, without sockets.
#include "connection_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace hvd::common {
namespace {

AdmissionLimits Limits(size_t total, size_t unauthenticated, size_t per_peer) {
  AdmissionLimits limits;
  limits.max_connections = total;
  limits.max_unauthenticated = unauthenticated;
  limits.max_unauthenticated_per_peer = per_peer;
  return limits;
}

TEST(ConnectionTableTest, AdmitsWithinTheBoundsAndCounts) {
  ConnectionTable table(Limits(10, 10, 10));
  auto a = table.Admit("10.0.0.1");
  auto b = table.Admit("10.0.0.1");
  auto c = table.Admit("10.0.0.2");
  ASSERT_TRUE(a.admitted && b.admitted && c.admitted);
  EXPECT_TRUE(a.evicted.empty() && b.evicted.empty() && c.evicted.empty());
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(table.total(), 3u);
  EXPECT_EQ(table.from_peer("10.0.0.1"), 2u);
  EXPECT_EQ(table.unauthenticated(), 3u);
  table.Authenticate(a.id);
  EXPECT_EQ(table.unauthenticated(), 2u);
  EXPECT_EQ(table.unauthenticated_from_peer("10.0.0.1"), 1u);
  table.Remove(a.id);
  table.Remove(a.id);  // twice: ignored
  EXPECT_EQ(table.total(), 2u);
  EXPECT_EQ(table.from_peer("10.0.0.1"), 1u);
}

TEST(ConnectionTableTest, APeerOverItsBoundLosesItsOldestStranger) {
  ConnectionTable table(Limits(100, 100, 3));
  std::vector<ConnectionTable::Id> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(table.Admit("attacker").id);
  auto other = table.Admit("worker-host");
  EXPECT_TRUE(other.evicted.empty());
  auto fourth = table.Admit("attacker");
  ASSERT_TRUE(fourth.admitted);
  EXPECT_EQ(fourth.evicted, std::vector<ConnectionTable::Id>{ids[0]});
  EXPECT_EQ(table.unauthenticated_from_peer("attacker"), 3u);
  auto fifth = table.Admit("attacker");
  EXPECT_EQ(fifth.evicted, std::vector<ConnectionTable::Id>{ids[1]});
}

TEST(ConnectionTableTest, AuthenticatedConnectionsAreNeverEvicted) {
  ConnectionTable table(Limits(100, 100, 2));
  auto worker = table.Admit("127.0.0.1");
  table.Authenticate(worker.id);
  // The same address floods: only its own strangers make room.
  std::vector<ConnectionTable::Id> evicted;
  for (int i = 0; i < 50; ++i) {
    auto a = table.Admit("127.0.0.1");
    ASSERT_TRUE(a.admitted);
    evicted.insert(evicted.end(), a.evicted.begin(), a.evicted.end());
  }
  for (auto id : evicted) EXPECT_NE(id, worker.id);
  EXPECT_EQ(evicted.size(), 48u);
  EXPECT_EQ(table.from_peer("127.0.0.1"), 3u);
  // A new worker connection is admitted and, once signed, stays.
  auto second = table.Admit("127.0.0.1");
  ASSERT_TRUE(second.admitted);
  table.Authenticate(second.id);
  EXPECT_EQ(table.unauthenticated_from_peer("127.0.0.1"), 1u);
}

TEST(ConnectionTableTest, TheTotalStrangerBoundEvictsTheOldestAnywhere) {
  ConnectionTable table(Limits(100, 3, 3));
  auto a = table.Admit("a");
  table.Admit("b");
  table.Admit("c");
  auto d = table.Admit("d");
  EXPECT_EQ(d.evicted, std::vector<ConnectionTable::Id>{a.id});
  EXPECT_EQ(table.unauthenticated(), 3u);
  EXPECT_EQ(table.from_peer("a"), 0u);
}

TEST(ConnectionTableTest, AFullTableOfSignedClientsRefusesNewcomers) {
  ConnectionTable table(Limits(2, 10, 10));
  auto a = table.Admit("a");
  auto b = table.Admit("b");
  table.Authenticate(a.id);
  // Full: the stranger b makes room for c.
  auto c = table.Admit("c");
  ASSERT_TRUE(c.admitted);
  EXPECT_EQ(c.evicted, std::vector<ConnectionTable::Id>{b.id});
  table.Authenticate(c.id);
  // Full of signed clients: refused, nothing evicted.
  auto d = table.Admit("d");
  EXPECT_FALSE(d.admitted);
  EXPECT_TRUE(d.evicted.empty());
  EXPECT_EQ(table.total(), 2u);
}

TEST(ConnectionTableTest, EvictOldestUnauthenticated) {
  ConnectionTable table(Limits(10, 10, 10));
  auto a = table.Admit("a");
  auto b = table.Admit("b");
  table.Authenticate(a.id);
  EXPECT_EQ(table.EvictOldestUnauthenticated(), b.id);
  EXPECT_EQ(table.EvictOldestUnauthenticated(), std::nullopt);
  EXPECT_EQ(table.total(), 1u);
}

}  // namespace
}  // namespace hvd::common
