#include "hvd/common/worker_key.h"

#include <gtest/gtest.h>

#include <string>

#include "hvd/common/hmac.h"

namespace hvd::common {
namespace {

TEST(WorkerKeyTest, TheHeaderNamesTheWorkerAndParsesBack) {
  WorkerIdentity who{7, "n1:0"};
  EXPECT_EQ(who.Header(), "7@n1:0");
  auto parsed = ParseWorkerIdentity(who.Header());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, who);
  // A slot may hold '@' and ':' (an IPv6 host): the id ends at the first.
  parsed = ParseWorkerIdentity("12@[fe80::1]:3");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, (WorkerIdentity{12, "[fe80::1]:3"}));
}

TEST(WorkerKeyTest, MalformedIdentitiesAreUnauthenticated) {
  const std::string longest(kMaxSlotBytes, 'h');
  EXPECT_TRUE(ParseWorkerIdentity("1@" + longest).ok());
  for (const std::string& bad :
       {std::string(""), std::string("7"), std::string("@n1:0"),
        std::string("7@"), std::string("0@n1:0"), std::string("-1@n1:0"),
        std::string("+1@n1:0"), std::string("07x@n1:0"), std::string("07@n1:0"),
        std::string("0007@n1:0"), std::string("99999999999999999999@n1:0"),
        std::string("7@n1 0"), std::string("7@n1\x01:0"),
        std::string("7@n1\xff:0"), "1@" + longest + "h"}) {
    auto parsed = ParseWorkerIdentity(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Code::kUnauthenticated) << bad;
    EXPECT_NE(parsed.status().message().find(kWorkerHeader), std::string::npos);
  }
}

// The derivation docs/protocol.md gives, so that a client in another
// language can check its own.
TEST(WorkerKeyTest, TheKeyIsTheDocumentedHmacAndNamesOneIncarnation) {
  const std::string key = WorkerKey("s3cret", {7, "n1:0"});
  EXPECT_EQ(key, HmacSha256Hex("s3cret", "hvd worker key\n7\nn1:0"));
  EXPECT_EQ(key.size(), 64u);
  EXPECT_NE(key, WorkerKey("s3cret", {8, "n1:0"})) << "a new incarnation";
  EXPECT_NE(key, WorkerKey("s3cret", {7, "n1:1"})) << "another slot";
  EXPECT_NE(key, WorkerKey("other", {7, "n1:0"})) << "another job";
  // The separator keeps "1" + "1:0" from meeting "11" + ":0".
  EXPECT_NE(WorkerKey("s", {1, "1:0"}), WorkerKey("s", {11, ":0"}));
}

TEST(WorkerKeyTest, TheCacheGivesTheDerivedKeyAndStaysBounded) {
  WorkerKeyCache cache(3);
  const WorkerIdentity who{7, "n1:0"};
  auto first = cache.Lookup("s", who.Header());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->who, who);
  EXPECT_EQ((*first)->key, WorkerKey("s", who));
  EXPECT_EQ(*cache.Lookup("s", who.Header()), *first) << "cached";
  for (int64_t id = 1; id <= 10; ++id) {
    const WorkerIdentity other{id, "n2:0"};
    auto found = cache.Lookup("s", other.Header());
    ASSERT_TRUE(found.ok());
    EXPECT_EQ((*found)->key, WorkerKey("s", other));
    EXPECT_LE(cache.size(), 3u);
  }
  auto malformed = cache.Lookup("s", "seven@n1:0");
  EXPECT_EQ(malformed.status().code(), Code::kUnauthenticated);
  EXPECT_LE(cache.size(), 3u);
}

TEST(GenerationKeyTest, EachGenerationHasItsOwnAndWrappingHidesIt) {
  const std::string generations = GenerationsKey("s3cret");
  EXPECT_EQ(generations.size(), 64u);
  EXPECT_NE(generations, GenerationsKey("other"));
  const std::string key = GenerationKey(generations, 3);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_NE(key, GenerationKey(generations, 4));
  EXPECT_NE(key, GenerationKey(GenerationsKey("other"), 3));
  const std::string seven = WorkerKey("s3cret", {7, "n1:0"});
  const std::string eight = WorkerKey("s3cret", {8, "n1:1"});
  const std::string wrapped = WrapGenerationKey(seven, 3, key);
  EXPECT_EQ(wrapped.size(), 64u);
  EXPECT_NE(wrapped, key);
  EXPECT_EQ(*UnwrapGenerationKey(seven, 3, wrapped), key);
  // Another worker, or the same one for another generation, reads noise.
  EXPECT_NE(*UnwrapGenerationKey(eight, 3, wrapped), key);
  EXPECT_NE(*UnwrapGenerationKey(seven, 4, wrapped), key);
  EXPECT_NE(WrapGenerationKey(eight, 3, key), wrapped);
  for (const std::string& bad :
       {std::string(), std::string(63, 'a'), std::string(64, 'G'),
        std::string(64, 'A'), std::string(65, 'a')}) {
    EXPECT_EQ(UnwrapGenerationKey(seven, 3, bad).status().code(),
              Code::kUnauthenticated)
        << bad;
  }
}

}  // namespace
}  // namespace hvd::common
