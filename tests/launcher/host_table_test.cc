// HostTable: first-seen order, slot updates, listing, blacklisting with and
// without a cooldown. Time is passed in: no test sleeps.
#include "policy/host_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;
using Clock = HostTable::Clock;

// A fixed origin far from the clock's epoch; all times are offsets from it.
const Clock::time_point kT0 = Clock::time_point(1000h);

std::vector<std::string> Names(const std::vector<HostSlots>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.host);
  return names;
}

std::vector<int> Slots(const std::vector<HostSlots>& hosts) {
  std::vector<int> slots;
  for (const auto& h : hosts) slots.push_back(h.slots);
  return slots;
}

TEST(HostTableTest, EmptyTableHasNothing) {
  HostTable table(std::nullopt);
  EXPECT_TRUE(table.Usable(kT0).empty());
  EXPECT_TRUE(table.Blacklisted(kT0).empty());
  EXPECT_FALSE(table.IsBlacklisted("a", kT0));
  EXPECT_FALSE(table.NextCooldownEnd(kT0).has_value());
}

TEST(HostTableTest, UsableKeepsListedOrderAndSlots) {
  HostTable table(std::nullopt);
  table.Update({{"c", 2}, {"a", 1}, {"b", 4}});
  auto usable = table.Usable(kT0);
  EXPECT_EQ(Names(usable), (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_EQ(Slots(usable), (std::vector<int>{2, 1, 4}));
}

TEST(HostTableTest, FirstSeenOrderSurvivesHostsLeavingAndComingBack) {
  HostTable table(std::nullopt);
  table.Update({{"a", 1}, {"b", 1}, {"c", 1}});
  // a disappears; discovery now lists d first.
  table.Update({{"d", 1}, {"c", 1}, {"b", 1}});
  EXPECT_EQ(Names(table.Usable(kT0)),
            (std::vector<std::string>{"b", "c", "d"}));
  // a comes back, listed last: it keeps its first-seen place at the front.
  table.Update({{"d", 1}, {"c", 1}, {"b", 1}, {"a", 1}});
  EXPECT_EQ(Names(table.Usable(kT0)),
            (std::vector<std::string>{"a", "b", "c", "d"}));
  // Everything gone, then e and a.
  table.Update({});
  EXPECT_TRUE(table.Usable(kT0).empty());
  table.Update({{"e", 1}, {"a", 1}});
  EXPECT_EQ(Names(table.Usable(kT0)), (std::vector<std::string>{"a", "e"}));
}

TEST(HostTableTest, SlotCountsFollowTheLatestListing) {
  HostTable table(std::nullopt);
  table.Update({{"a", 2}, {"b", 2}});
  table.Update({{"a", 8}, {"b", 1}});
  EXPECT_EQ(Slots(table.Usable(kT0)), (std::vector<int>{8, 1}));
  // A host that left and returns with a new count takes the new count.
  table.Update({{"b", 1}});
  table.Update({{"a", 3}, {"b", 1}});
  EXPECT_EQ(Names(table.Usable(kT0)), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Slots(table.Usable(kT0)), (std::vector<int>{3, 1}));
}

TEST(HostTableTest, PermanentBlacklistWithoutCooldown) {
  HostTable table(std::nullopt);
  table.Update({{"a", 1}, {"b", 2}, {"c", 1}});
  table.Blacklist("b", kT0);
  EXPECT_TRUE(table.IsBlacklisted("b", kT0));
  EXPECT_FALSE(table.IsBlacklisted("a", kT0));
  EXPECT_EQ(Names(table.Usable(kT0)), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(table.Blacklisted(kT0), std::vector<std::string>{"b"});
  // Forever: no cooldown end, still out a year later, and re-listing by
  // discovery does not bring it back.
  EXPECT_FALSE(table.NextCooldownEnd(kT0).has_value());
  const auto later = kT0 + 24h * 365;
  EXPECT_TRUE(table.IsBlacklisted("b", later));
  table.Update({{"b", 2}, {"a", 1}, {"c", 1}});
  EXPECT_EQ(Names(table.Usable(later)), (std::vector<std::string>{"a", "c"}));
}

TEST(HostTableTest, UnlistedHostsAreNeitherUsableNorReportedBlacklisted) {
  HostTable table(std::nullopt);
  table.Update({{"a", 1}, {"b", 1}});
  table.Blacklist("b", kT0);
  table.Update({{"a", 1}});
  EXPECT_EQ(Names(table.Usable(kT0)), std::vector<std::string>{"a"});
  // b is still blacklisted, but Blacklisted() lists only listed hosts.
  EXPECT_TRUE(table.IsBlacklisted("b", kT0));
  EXPECT_TRUE(table.Blacklisted(kT0).empty());
  table.Update({{"a", 1}, {"b", 1}});
  EXPECT_EQ(table.Blacklisted(kT0), std::vector<std::string>{"b"});
  EXPECT_EQ(Names(table.Usable(kT0)), std::vector<std::string>{"a"});
}

TEST(HostTableTest, CooldownDoublesPerBlacklistingUpToTheMax) {
  HostTable table(CooldownRange{1s, 4s});
  table.Update({{"a", 1}, {"b", 1}});
  // n-th blacklisting lasts min(4, 1 * 2^(n-1)) s: 1, 2, 4, 4, 4.
  const std::vector<std::chrono::seconds> expected = {1s, 2s, 4s, 4s, 4s};
  auto now = kT0;
  for (size_t n = 0; n < expected.size(); ++n) {
    table.Blacklist("a", now);
    const auto end = now + expected[n];
    SCOPED_TRACE("blacklisting " + std::to_string(n + 1));
    EXPECT_TRUE(table.IsBlacklisted("a", now));
    EXPECT_TRUE(table.IsBlacklisted("a", end - 1ms));
    EXPECT_FALSE(table.IsBlacklisted("a", end));
    ASSERT_TRUE(table.NextCooldownEnd(now).has_value());
    EXPECT_EQ(*table.NextCooldownEnd(now), end);
    EXPECT_EQ(Names(table.Usable(end - 1ms)), std::vector<std::string>{"b"});
    EXPECT_EQ(table.Blacklisted(end - 1ms), std::vector<std::string>{"a"});
    EXPECT_EQ(Names(table.Usable(end)), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(table.Blacklisted(end).empty());
    EXPECT_FALSE(table.NextCooldownEnd(end).has_value());
    now = end + 10s;
  }
}

TEST(HostTableTest, CooldownCountsPerHost) {
  HostTable table(CooldownRange{2s, 60s});
  table.Update({{"a", 1}, {"b", 1}});
  table.Blacklist("a", kT0);        // a: 1st, 2 s
  table.Blacklist("a", kT0 + 10s);  // a: 2nd, 4 s -> until +14 s
  table.Blacklist("b", kT0 + 10s);  // b: 1st, 2 s -> until +12 s
  EXPECT_EQ(*table.NextCooldownEnd(kT0 + 10s), kT0 + 12s);
  EXPECT_EQ(table.Blacklisted(kT0 + 11s), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(table.Blacklisted(kT0 + 12s), std::vector<std::string>{"a"});
  EXPECT_EQ(Names(table.Usable(kT0 + 12s)), std::vector<std::string>{"b"});
  EXPECT_EQ(*table.NextCooldownEnd(kT0 + 12s), kT0 + 14s);
  EXPECT_EQ(Names(table.Usable(kT0 + 14s)),
            (std::vector<std::string>{"a", "b"}));
}

TEST(HostTableTest, NextCooldownEndIgnoresUnlistedAndPermanentHosts) {
  HostTable table(CooldownRange{5s, 5s});
  table.Update({{"a", 1}, {"b", 1}});
  table.Blacklist("a", kT0);       // until +5 s
  table.Blacklist("b", kT0 + 1s);  // until +6 s
  EXPECT_EQ(*table.NextCooldownEnd(kT0 + 2s), kT0 + 5s);
  // a is no longer listed: only b's end counts.
  table.Update({{"b", 1}});
  EXPECT_EQ(*table.NextCooldownEnd(kT0 + 2s), kT0 + 6s);
  table.Update({});
  EXPECT_FALSE(table.NextCooldownEnd(kT0 + 2s).has_value());

  HostTable permanent(std::nullopt);
  permanent.Update({{"a", 1}});
  permanent.Blacklist("a", kT0);
  EXPECT_FALSE(permanent.NextCooldownEnd(kT0).has_value());
}

TEST(HostTableTest, HostReturningAfterCooldownWhileUnlisted) {
  HostTable table(CooldownRange{1s, 4s});
  table.Update({{"a", 2}, {"b", 1}});
  table.Blacklist("a", kT0);
  table.Update({{"b", 1}});  // a disappears while cooling down
  // a comes back after its cooldown: usable again, in first place.
  table.Update({{"b", 1}, {"a", 3}});
  EXPECT_EQ(Names(table.Usable(kT0 + 1s)),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Slots(table.Usable(kT0 + 1s)), (std::vector<int>{3, 1}));
  // Its blacklist count survived: the next one lasts 2 s.
  table.Blacklist("a", kT0 + 10s);
  EXPECT_EQ(*table.NextCooldownEnd(kT0 + 10s), kT0 + 12s);
}

TEST(HostTableTest, BlacklistingAnUnknownHostChangesNothing) {
  HostTable table(std::nullopt);
  table.Update({{"a", 1}});
  table.Blacklist("zz", kT0);
  EXPECT_EQ(Names(table.Usable(kT0)), std::vector<std::string>{"a"});
  EXPECT_TRUE(table.Blacklisted(kT0).empty());
  EXPECT_FALSE(table.IsBlacklisted("zz", kT0));
}

TEST(HostTableTest, UpdateSaysWhetherTheListingChanged) {
  HostTable table(std::nullopt);
  EXPECT_TRUE(table.Update({{"a", 2}}));
  EXPECT_FALSE(table.Update({{"a", 2}}));
  EXPECT_TRUE(table.Update({{"a", 3}}));
  EXPECT_TRUE(table.Update({{"a", 3}, {"b", 1}}));
  EXPECT_TRUE(table.Update({{"a", 3}}));             // b no longer listed
  EXPECT_TRUE(table.Update({{"a", 3}, {"b", 1}}));   // listed again
  EXPECT_FALSE(table.Update({{"b", 1}, {"a", 3}}));  // order alone
}

TEST(HostTableTest, ASlotOutLeavesItsHostUsable) {
  HostTable table(CooldownRange{2s, 5s});
  table.Update({{"a", 3}});
  EXPECT_EQ(table.BlacklistSlot("a", 1, kT0), Clock::duration(2s));
  EXPECT_EQ(Names(table.Usable(kT0)), std::vector<std::string>{"a"});
  EXPECT_FALSE(table.IsBlacklisted("a", kT0));
  EXPECT_EQ(table.SlotsOut("a", kT0), std::set<int>{1});
  EXPECT_EQ(table.NextCooldownEnd(kT0), kT0 + 2s);
  // A slot's cooldown is not its host's.
  EXPECT_FALSE(table.HostCooldownEnds(kT0, kT0 + 2s));
  EXPECT_TRUE(table.SlotsOut("a", kT0 + 2s).empty());
  // Counted per slot: its second time out is twice as long, another
  // slot's first is not.
  EXPECT_EQ(table.BlacklistSlot("a", 1, kT0 + 2s), Clock::duration(4s));
  EXPECT_EQ(table.BlacklistSlot("a", 0, kT0 + 2s), Clock::duration(2s));
  EXPECT_EQ(table.SlotsOut("a", kT0 + 5s), std::set<int>{1});
  EXPECT_EQ(table.Rows(kT0).front().times_blacklisted, 0);
}

TEST(HostTableTest, ASlotOutWithoutCooldownIsOutForGood) {
  HostTable table(std::nullopt);
  table.Update({{"a", 2}});
  EXPECT_FALSE(table.BlacklistSlot("a", 0, kT0).has_value());
  EXPECT_EQ(table.SlotsOut("a", kT0 + 1000h), std::set<int>{0});
  EXPECT_FALSE(table.NextCooldownEnd(kT0).has_value());
}

TEST(HostTableTest, HostCooldownEndsTellsHostsFromSlots) {
  HostTable table(CooldownRange{1s, 1s});
  table.Update({{"a", 1}, {"b", 2}});
  table.Blacklist("a", kT0);
  table.BlacklistSlot("b", 0, kT0 + 5s);
  EXPECT_TRUE(table.HostCooldownEnds(kT0, kT0 + 1s));
  EXPECT_FALSE(table.HostCooldownEnds(kT0 + 1s, kT0 + 10s));
  EXPECT_EQ(table.NextCooldownEnd(kT0 + 1s), kT0 + 6s);
}

// A discovery of a hundred thousand hosts (issue 33): applied, read and
// applied again in O(N log N). The table used to look each host up by a
// scan, N^2/2 string comparisons per update and per read (minutes here);
// the bound is far above what N log N takes even under a sanitizer.
TEST(HostTableTest, AHundredThousandHostsAreHandledInNLogN) {
  constexpr int kHosts = 100'000;
  std::vector<HostSlots> listed;
  for (int i = 0; i < kHosts; ++i) {
    listed.push_back({"node" + std::to_string(i), 1 + i % 8});
  }
  HostTable table(CooldownRange{10s, 60s});
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(table.Update(listed));
  table.Blacklist("node77", kT0);
  EXPECT_EQ(table.Usable(kT0).size(), size_t{kHosts - 1});
  EXPECT_EQ(table.Blacklisted(kT0), std::vector<std::string>{"node77"});
  // Listed again in another order, one host gone and one slot count
  // changed: the first-seen order stays.
  std::vector<HostSlots> again(listed.rbegin(), listed.rend() - 1);
  again.front().slots = 9;
  EXPECT_TRUE(table.Update(again));
  std::vector<HostSlots> usable = table.Usable(kT0);
  ASSERT_EQ(usable.size(), size_t{kHosts - 2});
  EXPECT_EQ(usable.front().host, "node1");
  EXPECT_EQ(usable.back().host, "node99999");
  EXPECT_EQ(usable.back().slots, 9);
  EXPECT_EQ(table.Rows(kT0).size(), size_t{kHosts});
  EXPECT_FALSE(table.Update(again));
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 10s)
      << "quadratic? "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
}

}  // namespace
}  // namespace hvd::launcher
