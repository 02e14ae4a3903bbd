// The shared-memory stage (runtime/src/ops/shm/): ranks are threads of this
// process, each with its own mapping of its host's segment and real Gloo
// contexts over loopback TCP (an in-process store), so every result is
// checked against a serial reduction without starting processes. "Hosts"
// are groups of threads with their own segments.
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "hvd/common/hmac.h"
#include "ops/dtype_dispatch.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/host_group.h"
#include "ops/shm/segment.h"

namespace hvd::runtime::shm {
namespace {

using common::Code;
using common::Status;

// A name no other test process uses.
std::string UniqueSecret() {
  static int serial = 0;
  std::random_device random;
  return "test-" + std::to_string(getpid()) + "-" + std::to_string(serial++) +
         "-" + std::to_string(random());
}

// /dev/shm names of the job whose rendezvous server is at `secret`:1
// (what names a job's segments, host_group.cc's JobPrefix).
std::vector<std::string> SegmentsOf(const std::string& secret) {
  const std::string prefix =
      "hvd-" + common::Sha256Hex("shm:" + secret + ":1").substr(0, 16);
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename();
    if (name.compare(0, prefix.size(), prefix) == 0) found.push_back(name);
  }
  return found;
}

struct Layout {
  int hosts;
  int per_host;
  int size() const { return hosts * per_host; }
};

struct RankEnv {
  RuntimeConfig config;
  std::shared_ptr<gloo::Context> global;
  std::unique_ptr<HostGroup> group;
  std::shared_ptr<AbortSwitch> abort_switch;
};

// Connects `layout`'s ranks (one thread each) and runs `body` on each.
// `adjust` may change a rank's config before it connects. With `set`, the
// group is that process set's (ascending job ranks): its members connect
// the set's context and group, and only they run `body`.
void OnRanks(const Layout& layout, size_t chunk_bytes,
             const std::function<void(RankEnv&)>& body,
             const std::function<void(RuntimeConfig&)>& adjust = {},
             const std::string& secret = UniqueSecret(),
             const std::vector<int>& set = {}) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  // No rank closes its connections while another may still use them.
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < layout.size(); ++rank) {
    threads.emplace_back([&, rank] {
      RankEnv env;
      // Declared after env: runs first, however this thread ends.
      struct Arrive {
        std::function<void()> at_end;
        ~Arrive() { at_end(); }
      } arrive{[&] {
        std::unique_lock<std::mutex> lock(mu);
        ++finished;
        cv.notify_all();
        cv.wait(lock, [&] { return finished == layout.size(); });
      }};
      RuntimeConfig& c = env.config;
      c.layout.rank = rank;
      c.layout.size = layout.size();
      c.layout.local_rank = rank % layout.per_host;
      c.layout.local_size = layout.per_host;
      c.layout.cross_rank = rank / layout.per_host;
      c.layout.cross_size = layout.hosts;
      c.rendezvous_addr = secret;  // names the job (SegmentsOf)
      c.rendezvous_port = 1;
      c.gloo_timeout = std::chrono::seconds(20);
      c.shm_chunk_bytes = chunk_bytes;
      if (adjust) adjust(c);
      auto connect = [&](const std::string& prefix, int r, int n) {
        gloo::rendezvous::PrefixStore prefixed(prefix, *store);
        auto context = std::make_shared<gloo::rendezvous::Context>(r, n);
        context->setTimeout(std::chrono::seconds(20));
        context->connectFullMesh(prefixed, device);
        return std::shared_ptr<gloo::Context>(context);
      };
      env.abort_switch = std::make_shared<AbortSwitch>();
      HostGroupSetup setup;
      setup.config = &c;
      setup.generation = 1;
      setup.abort_switch = env.abort_switch;
      if (set.empty()) {
        env.global = connect("global", rank, layout.size());
        setup.place = c.layout;
      } else {
        auto at = std::find(set.begin(), set.end(), rank);
        if (at == set.end()) return;
        env.global = connect("set", static_cast<int>(at - set.begin()),
                             static_cast<int>(set.size()));
        setup.place = SetPlace(c.layout, set);
        setup.set_tag = "s1.1";
      }
      setup.context = env.global;
      setup.connect_cross =
          [&]() -> common::Result<std::shared_ptr<gloo::Context>> {
        return connect("cross" + std::to_string(setup.place.local_rank),
                       setup.place.cross_rank, setup.place.cross_size);
      };
      auto group = HostGroup::Connect(setup);
      ASSERT_TRUE(group.ok()) << group.status().ToString();
      env.group = std::move(*group);
      body(env);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Rank r's element i: small values, so int8 products of four ranks and
// float16 sums stay exact.
double Input(int rank, size_t i) {
  double v = static_cast<double>((i + rank) % 3 + 1);
  return rank % 2 ? -v : v;
}

double Combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kProduct:
      return a * b;
    default:
      return a + b;
  }
}

template <typename T>
T Cast(double v) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    return gloo::cpu_float2half_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
double Back(T v) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    return gloo::cpu_half2float(v);
  } else {
    return static_cast<double>(v);
  }
}

constexpr DataType kTypes[] = {
    DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,  DataType::kInt64,
    DataType::kFloat16, DataType::kFloat32, DataType::kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

// Every type and op at sizes around the chunk (4 KiB) and the slices.
void CheckAllreduce(RankEnv& env) {
  ASSERT_NE(env.group, nullptr);
  const int size = env.config.layout.size;
  for (DataType dtype : kTypes) {
    for (ReduceOp op : kOps) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001},
                           size_t{4096 * 3 + 5}}) {
        WithCppType(dtype, [&](auto type) {
          using T = decltype(type);
          const bool unsigned_type = dtype == DataType::kUInt8;
          std::vector<T> data(count);
          for (size_t i = 0; i < count; ++i) {
            const double v = Input(env.config.layout.rank, i);
            data[i] = Cast<T>(unsigned_type ? std::fabs(v) : v);
          }
          Status status = env.group->Allreduce(dtype, op, data.data(), count,
                                               "test allreduce");
          ASSERT_TRUE(status.ok()) << status.ToString();
          for (size_t i = 0; i < count; ++i) {
            double want = 0;
            for (int r = 0; r < size; ++r) {
              double v = Input(r, i);
              if (unsigned_type) v = std::fabs(v);
              want = r == 0 ? v : Combine(op, want, v);
            }
            ASSERT_EQ(Back(data[i]), Back(Cast<T>(want)))
                << DataTypeName(dtype) << " " << ReduceOpName(op) << " count "
                << count << " element " << i << " on rank "
                << env.config.layout.rank;
          }
        });
      }
    }
  }
}

class HostGroupLayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(HostGroupLayoutTest, AllreduceMatchesASerialReduction) {
  OnRanks(GetParam(), 4096, CheckAllreduce);
}

TEST_P(HostGroupLayoutTest, BroadcastFromEveryRoot) {
  OnRanks(GetParam(), 4096, [](RankEnv& env) {
    ASSERT_NE(env.group, nullptr);
    for (int root = 0; root < env.config.layout.size; ++root) {
      for (size_t bytes : {size_t{1}, size_t{4095}, size_t{4096 * 2 + 3}}) {
        std::vector<uint8_t> data(bytes);
        for (size_t i = 0; i < bytes; ++i) {
          data[i] = static_cast<uint8_t>(i * 7 + env.config.layout.rank);
        }
        Status status =
            env.group->Broadcast(data.data(), bytes, root, "test broadcast");
        ASSERT_TRUE(status.ok()) << status.ToString();
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(data[i], static_cast<uint8_t>(i * 7 + root))
              << "root " << root << " byte " << i;
        }
      }
    }
  });
}

TEST_P(HostGroupLayoutTest, AllgatherOfUnevenContributions) {
  OnRanks(GetParam(), 4096, [](RankEnv& env) {
    ASSERT_NE(env.group, nullptr);
    const int size = env.config.layout.size;
    // Rank 0 gives nothing; some give more than a chunk.
    for (size_t unit : {size_t{3}, size_t{3001}}) {
      std::vector<size_t> bytes(size);
      for (int r = 0; r < size; ++r) bytes[r] = r * unit;
      auto byte_of = [](int r, size_t i) {
        return static_cast<uint8_t>(r * 31 + i % 251);
      };
      std::vector<uint8_t> mine(bytes[env.config.layout.rank]);
      for (size_t i = 0; i < mine.size(); ++i) {
        mine[i] = byte_of(env.config.layout.rank, i);
      }
      size_t total = 0;
      for (size_t b : bytes) total += b;
      std::vector<uint8_t> out(total, 0xEE);
      Status status = env.group->Allgather(mine.data(), bytes, out.data(),
                                           "test allgather");
      ASSERT_TRUE(status.ok()) << status.ToString();
      size_t at = 0;
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < bytes[r]; ++i, ++at) {
          ASSERT_EQ(out[at], byte_of(r, i)) << "rank " << r << " byte " << i;
        }
      }
    }
  });
}

TEST_P(HostGroupLayoutTest, GatherToRankZero) {
  OnRanks(GetParam(), 4096, [](RankEnv& env) {
    ASSERT_NE(env.group, nullptr);
    const int size = env.config.layout.size;
    EXPECT_EQ(env.group->rank(), env.config.layout.rank);
    EXPECT_EQ(env.group->size(), size);
    for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096 + 17}}) {
      std::vector<uint8_t> mine(bytes);
      for (size_t i = 0; i < bytes; ++i) {
        mine[i] = static_cast<uint8_t>(env.config.layout.rank * 13 + i);
      }
      std::vector<uint8_t> out(env.config.layout.rank == 0 ? bytes * size : 0);
      Status status =
          env.group->Gather(mine.data(), bytes, out.data(), "test gather");
      ASSERT_TRUE(status.ok()) << status.ToString();
      if (env.config.layout.rank != 0) continue;
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(out[r * bytes + i], static_cast<uint8_t>(r * 13 + i))
              << "rank " << r << " byte " << i;
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, HostGroupLayoutTest,
                         ::testing::Values(Layout{1, 2}, Layout{1, 3},
                                           Layout{1, 4}, Layout{2, 2},
                                           Layout{3, 2}),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           return std::to_string(info.param.hosts) + "x" +
                                  std::to_string(info.param.per_host);
                         });

TEST(HostGroupTest, NoSegmentIsLeftOnceConnected) {
  const std::string secret = UniqueSecret();
  OnRanks(
      {2, 2}, 4096,
      [&](RankEnv& env) {
        ASSERT_NE(env.group, nullptr);
        // Connect returns after every rank has mapped and unlinked.
        EXPECT_EQ(SegmentsOf(secret), std::vector<std::string>());
      },
      {}, secret);
}

TEST(HostGroupTest, TwoStartsOfOneJobAndGenerationNeverShareASegment) {
  // As two tests of one job's secret running at once (ctest -j) did.
  const std::string secret = UniqueSecret();
  auto job = [&] {
    OnRanks(
        {1, 3}, 4096, [](RankEnv& env) { CheckAllreduce(env); }, {}, secret);
  };
  std::thread other(job);
  job();
  other.join();
}

TEST(HostGroupTest, FlatWhenSwitchedOffOnAnyRank) {
  OnRanks(
      {1, 3}, 4096, [](RankEnv& env) { EXPECT_EQ(env.group, nullptr); },
      [](RuntimeConfig& c) {
        if (c.layout.rank == 1) {
          c.hierarchical_allreduce = false;
          c.hierarchical_allgather = false;
        }
      });
}

TEST(HostGroupTest, OneKindOffOnOneRankIsOffEverywhere) {
  OnRanks(
      {1, 2}, 4096,
      [](RankEnv& env) {
        ASSERT_NE(env.group, nullptr);
        EXPECT_TRUE(env.group->allreduce_on());
        EXPECT_FALSE(env.group->allgather_on());
      },
      [](RuntimeConfig& c) {
        if (c.layout.rank == 1) c.hierarchical_allgather = false;
      });
}

TEST(HostGroupTest, FlatWhenHostsHaveDifferentNumbersOfRanks) {
  // Three ranks: two on host A, one on host B.
  OnRanks(
      {1, 3}, 4096, [](RankEnv& env) { EXPECT_EQ(env.group, nullptr); },
      [](RuntimeConfig& c) {
        c.layout.local_size = c.layout.rank < 2 ? 2 : 1;
        c.layout.local_rank = c.layout.rank < 2 ? c.layout.rank : 0;
        c.layout.cross_size = c.layout.local_rank == 0 ? 2 : 1;
        c.layout.cross_rank = c.layout.rank < 2 ? 0 : 1;
      });
}

TEST(HostGroupTest, FlatWithOneRankPerHost) {
  OnRanks({3, 1}, 4096, [](RankEnv& env) { EXPECT_EQ(env.group, nullptr); });
}

common::RankLayout JobPlace(int rank, int hosts, int per_host) {
  return {rank,     hosts * per_host, rank % per_host,
          per_host, rank / per_host,  hosts};
}

TEST(SetPlaceTest, RanksAmongTheSetsRanksOnTheSameHostsInOrder) {
  // Three hosts of three ranks; the set has two ranks on hosts 0 and 2.
  const std::vector<int> set = {1, 2, 7, 8};
  common::RankLayout place = SetPlace(JobPlace(7, 3, 3), set);
  EXPECT_EQ(place.rank, 2);
  EXPECT_EQ(place.size, 4);
  EXPECT_EQ(place.local_rank, 0);
  EXPECT_EQ(place.local_size, 2);
  EXPECT_EQ(place.cross_rank, 1);
  EXPECT_EQ(place.cross_size, 2);
  place = SetPlace(JobPlace(2, 3, 3), set);
  EXPECT_EQ(place.rank, 1);
  EXPECT_EQ(place.local_rank, 1);
  EXPECT_EQ(place.cross_rank, 0);
  // Uneven: host 0 has one rank of the set, host 1 two.
  place = SetPlace(JobPlace(4, 3, 3), {2, 3, 4});
  EXPECT_EQ(place.rank, 2);
  EXPECT_EQ(place.local_rank, 1);
  EXPECT_EQ(place.local_size, 2);
  EXPECT_EQ(place.cross_rank, 1);
  EXPECT_EQ(place.cross_size, 2);
  // The whole job: its own layout.
  const common::RankLayout job = JobPlace(4, 2, 3);
  place = SetPlace(job, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(
      std::make_tuple(place.rank, place.size, place.local_rank,
                      place.local_size, place.cross_rank, place.cross_size),
      std::make_tuple(job.rank, job.size, job.local_rank, job.local_size,
                      job.cross_rank, job.cross_size));
}

// A set with two of its ranks on each of two hosts of three: its own
// segments and cross contexts, its sums over its members only.
TEST(HostGroupTest, AProcessSetsGroupReducesAndGathersOverItsMembers) {
  const std::vector<int> set = {0, 1, 3, 4};
  OnRanks(
      {2, 3}, 4096,
      [&](RankEnv& env) {
        ASSERT_NE(env.group, nullptr);
        const int me = env.config.layout.rank;
        EXPECT_EQ(env.group->size(), 4);
        EXPECT_EQ(set[env.group->rank()], me);
        const size_t count = 4096 * 2 + 3;
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = Input(me, i);
        Status status = env.group->Allreduce(DataType::kFloat32, ReduceOp::kSum,
                                             data.data(), count, "sum");
        ASSERT_TRUE(status.ok()) << status.ToString();
        for (size_t i = 0; i < count; ++i) {
          double want = 0;
          for (int r : set) want += Input(r, i);
          ASSERT_EQ(data[i], static_cast<float>(want)) << "element " << i;
        }
        // Set rank k gives k + 1 bytes of value 10 * (its job rank).
        std::vector<size_t> bytes_by_rank = {1, 2, 3, 4};
        std::vector<uint8_t> mine(env.group->rank() + 1,
                                  static_cast<uint8_t>(10 * me));
        std::vector<uint8_t> all(10), want;
        for (int k = 0; k < 4; ++k) {
          want.insert(want.end(), k + 1, static_cast<uint8_t>(10 * set[k]));
        }
        status = env.group->Allgather(mine.data(), bytes_by_rank, all.data(),
                                      "gather");
        ASSERT_TRUE(status.ok()) << status.ToString();
        EXPECT_EQ(all, want);
      },
      {}, UniqueSecret(), set);
}

TEST(HostGroupTest, ProcessSetsFlatOrNotByHowTheirRanksShareHosts) {
  // One host: a group. One rank per host, or hosts with different numbers
  // of the set's ranks: flat.
  OnRanks({2, 3}, 4096, [](RankEnv& env) { EXPECT_NE(env.group, nullptr); }, {},
          UniqueSecret(), {1, 2});
  OnRanks({2, 3}, 4096, [](RankEnv& env) { EXPECT_EQ(env.group, nullptr); }, {},
          UniqueSecret(), {0, 3});
  OnRanks({2, 3}, 4096, [](RankEnv& env) { EXPECT_EQ(env.group, nullptr); }, {},
          UniqueSecret(), {0, 1, 3});
}

TEST(HostGroupTest, ARankThatNeverComesIsABoundedErrorOnTheOthers) {
  OnRanks(
      {1, 3}, 4096,
      [](RankEnv& env) {
        ASSERT_NE(env.group, nullptr);
        if (env.config.layout.rank == 2) return;  // never takes part
        std::vector<float> data(100, 1.0f);
        Status status =
            env.group->Allreduce(DataType::kFloat32, ReduceOp::kSum,
                                 data.data(), data.size(), "test allreduce");
        // The first to give up times out and breaks the segment; the
        // other learns from that.
        EXPECT_TRUE(status.code() == Code::kTimeout ||
                    status.code() == Code::kTransport)
            << status.ToString();
        EXPECT_NE(status.message().find("test allreduce"), std::string::npos)
            << status.ToString();
      },
      [](RuntimeConfig& c) {
        c.gloo_timeout = std::chrono::milliseconds(300);
      });
}

TEST(HostGroupTest, AbortEndsAWaitOnTheSegment) {
  // The timeout is long: only the Abort can end these waits in time for
  // the status to say "aborted".
  OnRanks({1, 3}, 4096, [](RankEnv& env) {
    ASSERT_NE(env.group, nullptr);
    if (env.config.layout.rank == 2) {
      // Aborts its own generation instead of taking part, as a worker
      // told by the driver that a peer died does.
      env.abort_switch->Abort("a peer died");
      return;
    }
    std::vector<float> data(100, 1.0f);
    Status status =
        env.group->Allreduce(DataType::kFloat32, ReduceOp::kSum, data.data(),
                             data.size(), "test allreduce");
    EXPECT_EQ(status.code(), Code::kTransport) << status.ToString();
  });
}

TEST(HostBarrierTest, AfterAnAbortOrABreakEveryWaitFailsEvenInStep) {
  // Ranks that reach a barrier together never sleep in it; the abort and
  // the broken segment must stop them all the same (a barrier of one rank
  // is always reached in step).
  using namespace std::chrono_literals;
  BarrierWords words;
  std::atomic<bool> aborted{false};
  HostBarrier barrier(&words, 1, 60s, &aborted);
  ASSERT_TRUE(barrier.Wait("before").ok());
  aborted.store(true);
  Status status = barrier.Wait("after the abort");
  EXPECT_EQ(status.code(), Code::kTransport) << status.ToString();
  EXPECT_NE(status.ToString().find("aborted"), std::string::npos);

  BarrierWords other_words;
  std::atomic<bool> not_aborted{false};
  HostBarrier peer(&other_words, 1, 60s, &not_aborted);
  HostBarrier mine(&other_words, 1, 60s, &not_aborted);
  ASSERT_TRUE(mine.Wait("before").ok());
  peer.Break();
  status = mine.Wait("after a peer broke the segment");
  EXPECT_EQ(status.code(), Code::kTransport) << status.ToString();
  EXPECT_NE(status.ToString().find("another rank"), std::string::npos);
}

TEST(SegmentTest, EarlierGenerationsOfTheJobAreRemoved) {
  const std::string prefix = "/hvd-segtest" + std::to_string(getpid()) + "-g";
  std::vector<std::unique_ptr<Segment>> kept;
  for (int g : {1, 2, 3, 12}) {
    auto s = Segment::Create(prefix + std::to_string(g) + "-h0", 4096);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    kept.push_back(std::move(*s));
  }
  Segment::UnlinkEarlierGenerations(prefix, 3);
  for (int g : {1, 2}) {
    EXPECT_FALSE(Segment::Open(prefix + std::to_string(g) + "-h0", 4096).ok());
  }
  for (int g : {3, 12}) {
    const std::string name = prefix + std::to_string(g) + "-h0";
    auto opened = Segment::Open(name, 4096);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    Segment::Unlink(name);
  }
}

TEST(SegmentTest, MappingsShareMemoryAndOutliveTheName) {
  const std::string name = "/hvd-segtest" + std::to_string(getpid()) + "-x";
  auto created = Segment::Create(name, 8192);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto opened = Segment::Open(name, 8192);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Segment::Unlink(name);
  (*created)->data()[8191] = 42;
  EXPECT_EQ((*opened)->data()[8191], 42);
  EXPECT_FALSE(Segment::Open(name, 8192).ok());
  // A second creation under a live name is refused.
  auto again = Segment::Create(name, 8192);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(Segment::Create(name, 8192).ok());
  Segment::Unlink(name);
}

TEST(SegmentTest, AWrongSizeIsRefused) {
  const std::string name = "/hvd-segtest" + std::to_string(getpid()) + "-y";
  auto created = Segment::Create(name, 4096);
  ASSERT_TRUE(created.ok());
  auto opened = Segment::Open(name, 8192);
  EXPECT_FALSE(opened.ok());
  Segment::Unlink(name);
}

}  // namespace
}  // namespace hvd::runtime::shm
