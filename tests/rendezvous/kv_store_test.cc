#include "hvd/rendezvous/kv_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace hvd::rendezvous {
namespace {

using common::Code;
using namespace std::chrono_literals;

KvStore::Clock::time_point In(std::chrono::milliseconds ms) {
  return KvStore::Clock::now() + ms;
}

// Blocks until the store reports `count` waiters, so a test knows that its
// waiting thread is parked before it acts.
void AwaitWaiters(const KvStore& store, size_t count) {
  auto give_up = KvStore::Clock::now() + 10s;
  while (store.Stats().waiters != count && KvStore::Clock::now() < give_up) {
    std::this_thread::yield();
  }
  ASSERT_EQ(store.Stats().waiters, count);
}

TEST(KvStoreTest, SetGetDeleteInScopes) {
  KvStore store;
  ASSERT_TRUE(store.Set("a", "k", "1").ok());
  ASSERT_TRUE(store.Set("b", "k", "2").ok());
  EXPECT_EQ(*store.Get("a", "k"), "1");
  EXPECT_EQ(*store.Get("b", "k"), "2");
  ASSERT_TRUE(store.Set("a", "k", "one").ok());
  EXPECT_EQ(*store.Get("a", "k"), "one");
  EXPECT_TRUE(store.Delete("a", "k").ok());
  EXPECT_EQ(store.Get("a", "k").status().code(), Code::kNotFound);
  EXPECT_EQ(store.Delete("a", "k").code(), Code::kNotFound);
  EXPECT_EQ(*store.Get("b", "k"), "2");
}

TEST(KvStoreTest, DeletePrefixRemovesOneGenerationsKeysAndTheirBytes) {
  KvStore store;
  ASSERT_TRUE(store.Set("gloo", "g1/global/0", "aa").ok());
  ASSERT_TRUE(store.Set("gloo", "g1/global/rank_0", "bb").ok());
  ASSERT_TRUE(store.Set("gloo", "g10/global/0", "cc").ok());
  ASSERT_TRUE(store.Set("gloo", "g2/global/0", "dd").ok());
  ASSERT_TRUE(store.Set("other", "g1/x", "ee").ok());
  const size_t before = store.Stats().bytes;
  // "g1/" is not a prefix of "g10/...".
  EXPECT_EQ(store.DeletePrefix("gloo", "g1/"), 2u);
  EXPECT_EQ(store.DeletePrefix("gloo", "g1/"), 0u);
  EXPECT_EQ(store.DeletePrefix("none", "g1/"), 0u);
  EXPECT_FALSE(store.Get("gloo", "g1/global/0").ok());
  EXPECT_EQ(*store.Get("gloo", "g10/global/0"), "cc");
  EXPECT_EQ(*store.Get("gloo", "g2/global/0"), "dd");
  EXPECT_EQ(*store.Get("other", "g1/x"), "ee");
  EXPECT_EQ(store.Stats().bytes,
            before - std::string("g1/global/0aag1/global/rank_0bb").size() -
                2 * kKvEntryOverheadBytes);
}

TEST(KvStoreTest, DeleteScopeRemovesOnlyThatScope) {
  KvStore store;
  ASSERT_TRUE(store.Set("g1", "x", "1").ok());
  ASSERT_TRUE(store.Set("g1", "y", "2").ok());
  ASSERT_TRUE(store.Set("g2", "x", "3").ok());
  EXPECT_EQ(store.DeleteScope("g1"), 2u);
  EXPECT_EQ(store.DeleteScope("g1"), 0u);
  EXPECT_EQ(*store.Get("g2", "x"), "3");
  KvStats stats = store.Stats();
  EXPECT_EQ(stats.scopes, 1u);
  EXPECT_EQ(stats.keys, 1u);
  // "x" and "3", the key's overhead, and the scope's with its name.
  EXPECT_EQ(stats.bytes,
            2u + kKvEntryOverheadBytes + 2 + kKvScopeOverheadBytes);
  EXPECT_EQ(store.DeleteScope("g2"), 1u);
  EXPECT_EQ(store.Stats().bytes, 0u);
}

TEST(KvStoreTest, LimitsAreEnforcedAndNamed) {
  KvLimits limits;
  limits.max_key_bytes = 4;
  limits.max_value_bytes = 8;
  // One scope "s" and two keys of 10 bytes, with their overhead.
  limits.max_total_bytes =
      kKvScopeOverheadBytes + 1 + 2 * (10 + kKvEntryOverheadBytes);
  KvStore store(limits);
  auto key = store.Set("s", "toolong", "v");
  EXPECT_EQ(key.code(), Code::kResourceExhausted);
  EXPECT_NE(key.message().find("max_key_bytes=4"), std::string::npos);
  auto value = store.Set("s", "k", "123456789");
  EXPECT_EQ(value.code(), Code::kResourceExhausted);
  EXPECT_NE(value.message().find("max_value_bytes=8"), std::string::npos);
  ASSERT_TRUE(store.Set("s", "k1", "12345678").ok());  // 10 bytes
  ASSERT_TRUE(store.Set("s", "k2", "12345678").ok());  // 20 bytes
  auto full = store.Set("s", "k3", "");
  EXPECT_EQ(full.code(), Code::kResourceExhausted);
  EXPECT_NE(full.message().find("max_total_bytes=" +
                                std::to_string(limits.max_total_bytes)),
            std::string::npos);
  // Replacing a value frees its old bytes first.
  EXPECT_TRUE(store.Set("s", "k2", "12345").ok());
  EXPECT_FALSE(store.Set("s", "k3", "").ok());
  EXPECT_TRUE(store.Set("s", "k2", "").ok());
  EXPECT_TRUE(store.Delete("s", "k1").ok());
  EXPECT_TRUE(store.Set("s", "k3", "12345678").ok());
}

// A client with a key cannot hold more than the budget in tiny keys: each
// costs its overhead too (issue 33).
TEST(KvStoreTest, TinyKeysAreChargedTheirOverhead) {
  KvLimits limits;
  limits.max_total_bytes = 64 * 1024;
  KvStore store(limits);
  size_t accepted = 0;
  while (store.Set("gloo", "g0/" + std::to_string(accepted), "").ok()) {
    ++accepted;
    ASSERT_LT(accepted, 64u * 1024) << "the budget never filled";
  }
  EXPECT_LE(accepted, limits.max_total_bytes / kKvEntryOverheadBytes);
  EXPECT_GE(accepted, limits.max_total_bytes / (2 * kKvEntryOverheadBytes));
  EXPECT_LE(store.Stats().bytes, limits.max_total_bytes);
}

// Prefixes are names too: as long as a key at most, and remembered answers
// are bounded however many distinct prefixes are asked for.
TEST(KvStoreTest, PrefixWaitsAreBoundedInLengthAndInWhatIsRemembered) {
  KvLimits limits;
  limits.max_key_bytes = 64;
  KvStore store(limits);
  ASSERT_TRUE(store.Set("gloo", "g0/a", "v").ok());
  auto now = KvStore::Clock::now();
  auto long_prefix = store.WaitPrefix("gloo", std::string(65, 'g'), 0, now);
  EXPECT_EQ(long_prefix.status().code(), Code::kResourceExhausted);
  EXPECT_NE(long_prefix.status().message().find("prefix of 65 bytes"),
            std::string::npos)
      << long_prefix.status().ToString();
  std::vector<std::shared_ptr<const KvStore::PrefixSnapshot>> held;
  for (int i = 0; i < 4 * static_cast<int>(kKvMaxCachedPrefixes); ++i) {
    auto answer = store.WaitPrefix("gloo", "g" + std::to_string(i), 0, now);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    if (i % 2 == 0) held.push_back(*answer);  // some still being written
  }
  EXPECT_LE(store.Stats().cached_prefixes, kKvMaxCachedPrefixes);
  // A change forgets them all (they are stale).
  ASSERT_TRUE(store.Set("gloo", "g0/b", "v").ok());
  EXPECT_EQ(store.Stats().cached_prefixes, 0u);
  // Waiters of one version still share one answer.
  auto first = store.WaitPrefix("gloo", "g0/", 2, now);
  auto second = store.WaitPrefix("gloo", "g0/", 2, now);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());
}

TEST(KvStoreTest, WaitAllWakesWhenTheLastKeyArrives) {
  KvStore store;
  ASSERT_TRUE(store.Set("s", "a", "A").ok());
  common::Result<KvStore::Values> result = common::Status::Internal("unset");
  std::thread waiter([&] {
    result = store.WaitAll("s", {"a", "b", "c"}, In(30s));
  });
  AwaitWaiters(store, 1);
  ASSERT_TRUE(store.Set("s", "b", "B").ok());
  ASSERT_TRUE(store.Set("other", "c", "wrong scope").ok());
  ASSERT_TRUE(store.Set("s", "c", "C").ok());
  waiter.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, (KvStore::Values{{"a", "A"}, {"b", "B"}, {"c", "C"}}));
  EXPECT_EQ(store.Stats().waiters, 0u);
}

TEST(KvStoreTest, WaitAllTimesOutNamingMissingKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set("s", "a", "A").ok());
  auto result = store.WaitAll("s", {"a", "b"}, In(20ms));
  ASSERT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_NE(result.status().message().find("'b'"), std::string::npos);
  EXPECT_EQ(result.status().message().find("'a'"), std::string::npos);
}

TEST(KvStoreTest, DeletedKeysNoLongerCount) {
  KvStore store;
  ASSERT_TRUE(store.Set("s", "a", "A").ok());
  common::Result<KvStore::Values> result = common::Status::Internal("unset");
  std::thread waiter([&] { result = store.WaitAll("s", {"a", "b"}, In(30s)); });
  AwaitWaiters(store, 1);
  ASSERT_TRUE(store.Delete("s", "a").ok());
  ASSERT_TRUE(store.Set("s", "b", "B").ok());
  // Only b exists now; the wait must still be pending.
  EXPECT_EQ(store.Stats().waiters, 1u);
  ASSERT_TRUE(store.Set("s", "a", "A2").ok());
  waiter.join();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->at("a"), "A2");
}

TEST(KvStoreTest, WaitPrefixCountsKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set("s", "rank/0", "x").ok());
  ASSERT_TRUE(store.Set("s", "other", "y").ok());
  common::Result<std::shared_ptr<const KvStore::PrefixSnapshot>> result =
      common::Status::Internal("unset");
  std::thread waiter(
      [&] { result = store.WaitPrefix("s", "rank/", 3, In(30s)); });
  AwaitWaiters(store, 1);
  ASSERT_TRUE(store.Set("s", "rank/1", "x").ok());
  ASSERT_TRUE(store.Set("s", "rank/1", "x again").ok());  // not a new key
  EXPECT_EQ(store.Stats().waiters, 1u);
  ASSERT_TRUE(store.Set("s", "rank/2", "x").ok());
  waiter.join();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)->values.size(), 3u);
  EXPECT_EQ((*result)->values.count("other"), 0u);
  // A second wait on the unchanged scope shares the snapshot; a change
  // makes a new one.
  auto again = store.WaitPrefix("s", "rank/", 3, In(1s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), result->get());
  ASSERT_TRUE(store.Set("s", "rank/3", "x").ok());
  auto changed = store.WaitPrefix("s", "rank/", 3, In(1s));
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->get(), result->get());
  EXPECT_EQ((*changed)->values.size(), 4u);
}

TEST(KvStoreTest, WaitPrefixTimesOutCountingPresentKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set("s", "p/1", "x").ok());
  auto result = store.WaitPrefix("s", "p/", 2, In(20ms));
  ASSERT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_NE(result.status().message().find("(1 present)"), std::string::npos)
      << result.status().message();
}

TEST(KvStoreTest, ShutdownAbortsWaitersAndLaterWaits) {
  KvStore store;
  common::Result<KvStore::Values> result = common::Status::Internal("unset");
  std::thread waiter([&] { result = store.WaitAll("s", {"never"}, In(60s)); });
  AwaitWaiters(store, 1);
  store.Shutdown();
  waiter.join();
  EXPECT_EQ(result.status().code(), Code::kAborted);
  EXPECT_EQ(store.WaitAll("s", {"x"}, In(60s)).status().code(), Code::kAborted);
}

TEST(KvStoreTest, ManyWaitersEachWokenByItsOwnKey) {
  KvStore store;
  constexpr int kWaiters = 64;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      auto r = store.WaitAll("s", {"k" + std::to_string(i)}, In(30s));
      if (r.ok() && r->begin()->second == std::to_string(i)) ++ok;
    });
  }
  AwaitWaiters(store, kWaiters);
  for (int i = kWaiters - 1; i >= 0; --i) {
    ASSERT_TRUE(
        store.Set("s", "k" + std::to_string(i), std::to_string(i)).ok());
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, kWaiters);
}

}  // namespace
}  // namespace hvd::rendezvous
