// The NCCL seam and the communicator's life-cycle on a real GPU. Built
// only with NCCL and run only by the gpu stage of scripts/test.sh when
// nvidia-smi sees a device (elsewhere the stage names these tests as not
// run); the same life-cycle runs without a GPU in
// tests/runtime/nccl_communicator_test.cc over a fake seam.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "ops/nccl/communicator.h"
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {
namespace {

using common::Code;

IdExchange Alone() {
  return [](const UniqueId* made) { return common::Result<UniqueId>(*made); };
}

CommunicatorLimits ShortLimits() {
  CommunicatorLimits limits;
  limits.setup = std::chrono::seconds(30);
  limits.op = std::chrono::seconds(10);
  return limits;
}

TEST(NcclGpuTest, TheSystemSeamSeesADeviceAndANewEnoughNccl) {
  auto api = SystemApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_GE((*api)->Version(), 22700);
  auto count = (*api)->DeviceCount();
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_GE(*count, 1);
}

TEST(NcclGpuTest, ACommunicatorOfOneInitsNonBlockingAndClosesCleanly) {
  auto api = SystemApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  auto comm = Communicator::Create(api->get(), Alone(), "set 0", 0, 0, 1,
                                   ShortLimits());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_TRUE((*comm)->AwaitIdle("nothing").ok());
  EXPECT_TRUE((*comm)->Close().ok());
  EXPECT_FALSE((*comm)->open());
}

TEST(NcclGpuTest, AnAbortAskedForEndsTheNextWaitWithoutAHang) {
  auto api = SystemApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  auto comm = Communicator::Create(api->get(), Alone(), "set 0", 0, 0, 1,
                                   ShortLimits());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  (*comm)->RequestAbort("the test asked");
  const common::Status status = (*comm)->AwaitIdle("allreduce");
  EXPECT_EQ(status.code(), Code::kAborted);
  EXPECT_FALSE((*comm)->open());
}

TEST(NcclGpuTest, ATwoRankInitWhosePeerNeverComesTimesOut) {
  auto api = SystemApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  CommunicatorLimits limits = ShortLimits();
  limits.setup = std::chrono::seconds(3);
  auto comm =
      Communicator::Create(api->get(), Alone(), "set 0", 0, 0, 2, limits);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kTimeout) << comm.status().ToString();
}

}  // namespace
}  // namespace hvd::runtime::nccl
