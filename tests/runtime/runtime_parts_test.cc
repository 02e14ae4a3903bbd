// Unit tests of the runtime's pure pieces: the response cache, the fusion
// plan and the stall inspector.
#include <gtest/gtest.h>

#include "engine/fusion_plan.h"
#include "negotiation/response_cache.h"
#include "negotiation/stall_inspector.h"

namespace hvd::runtime {
namespace {

Request Req(const std::string& name, std::vector<int64_t> shape = {4},
            OpType type = OpType::kAllreduce) {
  Request r;
  r.type = type;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

Response RunOf(const Request& r, std::vector<int64_t> sizes = {}) {
  Response response;
  response.request = r;
  response.sizes = std::move(sizes);
  return response;
}

TEST(ResponseCacheTest, HitsOnlyTheSameRequest) {
  ResponseCache cache(4);
  EXPECT_EQ(cache.Find(Req("a")).state, ResponseCache::State::kMiss);
  cache.Put(RunOf(Req("a")), Req("a"));
  auto hit = cache.Find(Req("a"));
  EXPECT_EQ(hit.state, ResponseCache::State::kHit);
  EXPECT_EQ(cache.response(hit.bit).request.name, "a");
  EXPECT_EQ(cache.Find(Req("a", {5})).state, ResponseCache::State::kInvalid)
      << "a new shape invalidates";
  Request other_dtype = Req("a");
  other_dtype.dtype = DataType::kFloat64;
  EXPECT_EQ(cache.Find(other_dtype).state, ResponseCache::State::kInvalid);
  cache.Erase(hit.bit);
  EXPECT_EQ(cache.Find(Req("a")).state, ResponseCache::State::kMiss);
}

TEST(ResponseCacheTest, EvictsTheLeastRecentlyUsedAndReusesItsBit) {
  ResponseCache cache(2);
  cache.Put(RunOf(Req("a")), Req("a"));
  cache.Put(RunOf(Req("b")), Req("b"));
  const uint32_t a_bit = cache.Find(Req("a")).bit;
  cache.Touch(a_bit);  // b is now the oldest
  const uint32_t b_bit = cache.Find(Req("b")).bit;
  cache.Put(RunOf(Req("c")), Req("c"));
  EXPECT_EQ(cache.Find(Req("b")).state, ResponseCache::State::kMiss);
  EXPECT_EQ(cache.Find(Req("a")).state, ResponseCache::State::kHit);
  EXPECT_EQ(cache.Find(Req("c")).bit, b_bit);
}

TEST(ResponseCacheTest, TwoCachesFedAlikeAgreeOnBits) {
  ResponseCache x(3), y(3);
  for (ResponseCache* c : {&x, &y}) {
    for (const char* name : {"p", "q", "r", "s", "t"}) {
      c->Put(RunOf(Req(name)), Req(name));
    }
    c->Touch(c->Find(Req("r")).bit);
    c->Put(RunOf(Req("u")), Req("u"));
  }
  for (const char* name : {"r", "t", "u"}) {
    ASSERT_EQ(x.Find(Req(name)).state, ResponseCache::State::kHit) << name;
    EXPECT_EQ(x.Find(Req(name)).bit, y.Find(Req(name)).bit) << name;
  }
}

TEST(ResponseCacheTest, OffWhenEmptyOrDisabled) {
  ResponseCache none(0);
  none.Put(RunOf(Req("a")), Req("a"));
  EXPECT_EQ(none.Find(Req("a")).state, ResponseCache::State::kMiss);
  ResponseCache cache(2);
  cache.Put(RunOf(Req("a")), Req("a"));
  cache.set_enabled(false);
  EXPECT_EQ(cache.Find(Req("a")).state, ResponseCache::State::kMiss);
  cache.set_enabled(true);
  EXPECT_EQ(cache.Find(Req("a")).state, ResponseCache::State::kMiss)
      << "switching off forgets";
}

std::vector<Response> Responses(std::vector<Request> requests) {
  std::vector<Response> out;
  for (Request& r : requests) out.push_back(RunOf(r));
  return out;
}

TEST(FusionPlanTest, FusesCompatibleResponsesUpToTheThreshold) {
  // 16-byte float32 tensors; a float64 one in between does not fuse.
  Request f64 = Req("d");
  f64.dtype = DataType::kFloat64;
  auto responses = Responses({Req("a"), f64, Req("b"), Req("c")});
  FusionOptions options;
  options.threshold = 32;
  auto units = PlanFusion(responses, options);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(units[1], (std::vector<size_t>{1}));
  EXPECT_EQ(units[2], (std::vector<size_t>{3}));
  options.threshold = 0;
  EXPECT_EQ(PlanFusion(responses, options).size(), 4u);
}

TEST(FusionPlanTest, AGroupRunsTogetherWhateverTheThreshold) {
  std::vector<Request> requests = {Req("x"), Req("g0"), Req("g1"), Req("y")};
  requests[1].group = requests[2].group = "g0+1";
  auto responses = Responses(requests);
  FusionOptions options;
  options.threshold = 0;
  auto units = PlanFusion(responses, options);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[1], (std::vector<size_t>{1, 2}));
  options.threshold = 1 << 20;
  units = PlanFusion(responses, options);
  ASSERT_EQ(units.size(), 1u) << "group fusion on: one unit";
  options.group_fusion = false;
  units = PlanFusion(responses, options);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0], (std::vector<size_t>{0, 3}));
  EXPECT_EQ(units[1], (std::vector<size_t>{1, 2}));
}

TEST(FusionPlanTest, OtherOpsAndErrorsRunAlone) {
  auto responses = Responses(
      {Req("a"), Req("b", {4}, OpType::kBroadcast), Req("c"), Req("e")});
  responses[3].kind = Response::Kind::kError;
  auto units = PlanFusion(responses, FusionOptions{});
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(FusionBytes(RunOf(Req("g", {3, 2}, OpType::kAllgather), {1, 0, 2})),
            (1 + 0 + 2) * 2 * 4u);
}

TEST(StallInspectorTest, WarnsNamingRanksThenStops) {
  StallOptions options;
  options.warn_after = std::chrono::seconds(10);
  options.shutdown_after = std::chrono::seconds(30);
  StallInspector inspector(options);
  const SteadyTime t0{};
  PendingTensor p{"grad", OpType::kAllreduce, t0, {2, 5}, {0}};
  EXPECT_FALSE(inspector.Check({p}, t0 + std::chrono::seconds(5)));
  EXPECT_EQ(inspector.warning_count(), 0);
  EXPECT_FALSE(inspector.Check({p}, t0 + std::chrono::seconds(11)));
  ASSERT_EQ(inspector.warning_count(), 1);
  EXPECT_NE(inspector.last_warning().find("allreduce 'grad': waiting 11 s for "
                                          "rank(s) 2, 5"),
            std::string::npos);
  EXPECT_FALSE(inspector.Check({p}, t0 + std::chrono::seconds(12)));
  EXPECT_EQ(inspector.warning_count(), 1) << "not again until 10 s later";
  auto stop = inspector.Check({p}, t0 + std::chrono::seconds(31));
  ASSERT_TRUE(stop);
  EXPECT_NE(stop->find("'grad' waited for rank(s) 2, 5"), std::string::npos);
}

TEST(StallInspectorTest, NeverStopsWithoutAShutdownTime) {
  StallInspector inspector(StallOptions{std::chrono::seconds(1), {}});
  PendingTensor p{"t", OpType::kBroadcast, SteadyTime{}, {1}, {0}};
  EXPECT_FALSE(inspector.Check({p}, SteadyTime{} + std::chrono::hours(1)));
  EXPECT_EQ(inspector.warning_count(), 1);
}

}  // namespace
}  // namespace hvd::runtime
