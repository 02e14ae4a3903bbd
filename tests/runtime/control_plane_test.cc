// The ControlPlane contract (control_plane.h), held by both planes: Gloo's,
// with real contexts over loopback TCP (ranks as threads of this process),
// and the in-process one the controller and negotiator tests use; then the
// in-process plane's failures: a member that stops calling, a member that
// dies, members that disagree.
#include "negotiation/control_plane.h"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "in_process_control_plane.h"

namespace hvd::runtime {
namespace {

using common::Code;
using common::Status;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

enum class PlaneKind { kGloo, kInProcess };

std::vector<std::unique_ptr<ControlPlane>> GlooPlanes(int size) {
  gloo::rendezvous::HashStore store;  // thread-safe
  std::vector<std::shared_ptr<gloo::Context>> contexts(size);
  std::vector<std::string> errors(size);
  OnEveryRank(size, [&](int rank) {
    try {
      auto device = gloo::transport::tcp::CreateDevice(
          gloo::transport::tcp::attr("127.0.0.1"));
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(30s);
      context->connectFullMesh(store, device);
      contexts[rank] = context;
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  });
  std::vector<std::unique_ptr<ControlPlane>> planes;
  for (int rank = 0; rank < size; ++rank) {
    EXPECT_EQ(errors[rank], "") << "rank " << rank << " did not connect";
    if (contexts[rank] == nullptr) return {};
    planes.push_back(std::make_unique<GlooControlPlane>(contexts[rank]));
  }
  return planes;
}

std::vector<std::unique_ptr<ControlPlane>> InProcessPlanes(
    int size, std::chrono::milliseconds timeout = 30s) {
  auto hub = std::make_shared<InProcessHub>(size, timeout);
  std::vector<std::unique_ptr<ControlPlane>> planes;
  for (int rank = 0; rank < size; ++rank) {
    planes.push_back(std::make_unique<InProcessControlPlane>(hub, rank));
  }
  return planes;
}

class ControlPlaneContractTest : public ::testing::TestWithParam<PlaneKind> {
 protected:
  std::vector<std::unique_ptr<ControlPlane>> Planes(int size) {
    return GetParam() == PlaneKind::kGloo ? GlooPlanes(size)
                                          : InProcessPlanes(size);
  }
};

TEST_P(ControlPlaneContractTest, RanksAndSize) {
  auto planes = Planes(3);
  ASSERT_EQ(planes.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(planes[rank]->rank(), rank);
    EXPECT_EQ(planes[rank]->size(), 3);
  }
}

TEST_P(ControlPlaneContractTest, GatherPutsEveryMembersBytesAtRankZero) {
  auto planes = Planes(3);
  ASSERT_EQ(planes.size(), 3u);
  std::vector<Status> statuses(3);
  std::string gathered(15, '?');
  OnEveryRank(3, [&](int rank) {
    const std::string mine = "rank" + std::to_string(rank);
    statuses[rank] =
        planes[rank]->Gather("test gather", mine.data(), mine.size(),
                             rank == 0 ? gathered.data() : nullptr);
  });
  for (const Status& s : statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(gathered, "rank0rank1rank2");
}

TEST_P(ControlPlaneContractTest, BroadcastGivesEveryMemberRankZerosBytes) {
  auto planes = Planes(4);
  ASSERT_EQ(planes.size(), 4u);
  std::vector<Status> statuses(4);
  std::vector<std::string> buffers(4, std::string(5, '.'));
  buffers[0] = "hello";
  OnEveryRank(4, [&](int rank) {
    statuses[rank] = planes[rank]->Broadcast(
        "test broadcast", buffers[rank].data(), buffers[rank].size());
  });
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(statuses[rank].ok()) << statuses[rank].ToString();
    EXPECT_EQ(buffers[rank], "hello") << "rank " << rank;
  }
}

// What the negotiation does: gathers and broadcasts in turn, of changing
// sizes, each matched with the same call on the other members.
TEST_P(ControlPlaneContractTest, RoundsInSequenceMatchUp) {
  constexpr int kSize = 3;
  constexpr int kRounds = 40;
  auto planes = Planes(kSize);
  ASSERT_EQ(planes.size(), size_t{kSize});
  std::vector<std::string> problems(kSize);
  OnEveryRank(kSize, [&](int rank) {
    ControlPlane& plane = *planes[rank];
    for (int round = 0; round < kRounds; ++round) {
      const size_t bytes = 1 + round % 7;
      std::string mine(bytes, static_cast<char>('a' + rank));
      std::string all(bytes * kSize, '?');
      Status s = plane.Gather("gather", mine.data(), bytes, all.data());
      if (s.ok() && rank == 0 &&
          all != std::string(bytes, 'a') + std::string(bytes, 'b') +
                     std::string(bytes, 'c')) {
        s = Status::Internal("gathered " + all);
      }
      std::string reply(bytes + 1, rank == 0 ? static_cast<char>(round) : '\0');
      if (s.ok()) s = plane.Broadcast("broadcast", reply.data(), reply.size());
      if (s.ok() && reply != std::string(bytes + 1, static_cast<char>(round))) {
        s = Status::Internal("a broadcast brought other bytes");
      }
      if (!s.ok()) {
        problems[rank] = "round " + std::to_string(round) + ": " + s.ToString();
        return;
      }
    }
  });
  for (int rank = 0; rank < kSize; ++rank) {
    EXPECT_EQ(problems[rank], "") << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Planes, ControlPlaneContractTest,
                         ::testing::Values(PlaneKind::kGloo,
                                           PlaneKind::kInProcess),
                         [](const auto& info) {
                           return info.param == PlaneKind::kGloo
                                      ? std::string("Gloo")
                                      : std::string("InProcess");
                         });

TEST(InProcessControlPlaneTest, AMemberThatStopsCallingIsATimeout) {
  constexpr auto kTimeout = 200ms;
  auto planes = InProcessPlanes(3, kTimeout);
  std::vector<Status> gathers(3), broadcasts(3);
  std::vector<Clock::duration> took(3);
  OnEveryRank(3, [&](int rank) {
    if (rank == 2) return;  // stops answering
    const auto start = Clock::now();
    char mine = 'x';
    std::string all(3, '?');
    gathers[rank] = planes[rank]->Gather("the gather", &mine, 1, all.data());
    if (gathers[rank].ok()) {
      broadcasts[rank] = planes[rank]->Broadcast("the broadcast", &mine, 1);
    }
    took[rank] = Clock::now() - start;
  });
  EXPECT_EQ(gathers[0].code(), Code::kTimeout);
  EXPECT_NE(gathers[0].message().find("the gather"), std::string::npos);
  EXPECT_NE(gathers[0].message().find("for ranks [2]"), std::string::npos)
      << gathers[0].ToString();
  EXPECT_TRUE(gathers[1].ok()) << "a sender does not wait for rank 0";
  EXPECT_EQ(broadcasts[1].code(), Code::kTimeout)
      << "rank 0 failed and never broadcast";
  EXPECT_NE(broadcasts[1].message().find("waited 200 ms for rank 0"),
            std::string::npos)
      << broadcasts[1].ToString();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_GE(took[rank], kTimeout);
    EXPECT_LT(took[rank], 10s) << "rank " << rank;
  }
}

TEST(InProcessControlPlaneTest, AKilledMemberFailsEveryOtherMember) {
  auto hub = std::make_shared<InProcessHub>(3, 60s);  // never reached
  std::vector<Status> statuses(3), later(3);
  std::vector<Clock::duration> took(3);
  OnEveryRank(3, [&](int rank) {
    InProcessControlPlane plane(hub, rank);
    char byte = 'x';
    if (rank == 2) {
      hub->Kill(2, "test kill");
      later[2] = plane.Broadcast("after death", &byte, 1);
      return;
    }
    const auto start = Clock::now();
    std::string all(3, '?');
    // Rank 0 waits in the gather; rank 1 gets through it and waits in the
    // broadcast (unless the kill came first).
    statuses[rank] = plane.Gather("the gather", &byte, 1, all.data());
    if (statuses[rank].ok()) {
      statuses[rank] = plane.Broadcast("the broadcast", &byte, 1);
    }
    took[rank] = Clock::now() - start;
    // A broadcast from rank 0 that never comes (rank 0 makes no more
    // calls): the wait fails at once.
    if (rank == 1) later[1] = plane.Broadcast("later", &byte, 1);
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(statuses[rank].code(), Code::kTransport) << rank;
    EXPECT_NE(statuses[rank].message().find("rank 2 died (test kill)"),
              std::string::npos)
        << statuses[rank].ToString();
    EXPECT_LT(took[rank], 10s) << "rank " << rank << " waited for the timeout";
  }
  EXPECT_EQ(later[1].code(), Code::kTransport) << later[1].ToString();
  EXPECT_EQ(later[2].code(), Code::kAborted) << later[2].ToString();
}

TEST(InProcessControlPlaneTest, WhatWasHandedOverBeforeADeathIsDelivered) {
  auto hub = std::make_shared<InProcessHub>(3, 60s);
  InProcessControlPlane zero(hub, 0), one(hub, 1), two(hub, 2);
  // One thread plays every rank, in an order that never waits.
  char a = 'a', b = 'b', c = 'c';
  std::string all(3, '?');
  ASSERT_TRUE(two.Gather("gather", &c, 1, nullptr).ok());
  ASSERT_TRUE(one.Gather("gather", &b, 1, nullptr).ok());
  char sent = 'r', got = '?';
  hub->Kill(2, "after its gather");
  EXPECT_TRUE(zero.Gather("gather", &a, 1, all.data()).ok());
  EXPECT_EQ(all, "abc");
  EXPECT_TRUE(zero.Broadcast("broadcast", &sent, 1).ok());
  EXPECT_TRUE(one.Broadcast("broadcast", &got, 1).ok());
  EXPECT_EQ(got, 'r');
}

TEST(InProcessControlPlaneTest, MembersThatDisagreeOnAStepFailAtOnce) {
  auto planes = InProcessPlanes(2, 60s);
  std::vector<Status> statuses(2);
  OnEveryRank(2, [&](int rank) {
    char in[4] = {}, out[8] = {};
    statuses[rank] = rank == 0 ? planes[0]->Gather("gather", in, 4, out)
                               : planes[1]->Broadcast("broadcast", in, 4);
  });
  for (const Status& s : statuses) {
    EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
    EXPECT_NE(s.message().find("but another rank made it a"), std::string::npos)
        << s.ToString();
  }
}

}  // namespace
}  // namespace hvd::runtime
