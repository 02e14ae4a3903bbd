// The NCCL seam and the communicator's life-cycle on a real GPU. Built
// only with NCCL and run only by the gpu stage of scripts/test.sh when
// nvidia-smi sees a device (elsewhere the stage names these tests as not
// run); the same life-cycle runs without a GPU in
// tests/runtime/nccl_communicator_test.cc over a fake seam.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvd/runtime/runtime.h"
#include "ops/nccl/communicator.h"
#include "ops/nccl/gpus.h"
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

// Each test needs the CUDA runtime, NCCL and a device. Without them it
// skips with the reason (ctest counts it as skipped), so that `ctest` on a
// machine without a GPU is green; the gpu stage of scripts/test.sh, which
// runs only where nvidia-smi lists a device, sets HVD_TEST_REQUIRE_GPU=1
// and the same reason then fails the test.
class NcclGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto api = SystemApi();
    std::string missing;
    if (!api.ok()) {
      missing = api.status().ToString();
    } else if (auto count = (*api)->DeviceCount(); !count.ok()) {
      missing = count.status().ToString();
    } else if (*count < 1) {
      missing = "the CUDA runtime sees no device";
    } else {
      api_ = std::move(*api);
      return;
    }
    const char* required = std::getenv("HVD_TEST_REQUIRE_GPU");
    if (required != nullptr && std::string(required) == "1") {
      FAIL() << "HVD_TEST_REQUIRE_GPU=1, but no usable GPU: " << missing;
    }
    GTEST_SKIP() << "needs a GPU: " << missing;
  }

  std::unique_ptr<Api> api_;
};

TEST_F(NcclGpuTest, TheSystemSeamSeesADeviceAndANewEnoughNccl) {
  EXPECT_GE(api_->Version(), 22700);
  auto count = api_->DeviceCount();
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_GE(*count, 1);
}

TEST_F(NcclGpuTest, ACommunicatorOfOneInitsNonBlockingAndClosesCleanly) {
  auto comm = Communicator::Create(api_.get(), Alone(), "set 0", 0, 0, 1,
                                   ShortLimits());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_TRUE((*comm)->AwaitIdle("nothing").ok());
  EXPECT_TRUE((*comm)->Close().ok());
  EXPECT_FALSE((*comm)->open());
}

TEST_F(NcclGpuTest, AnAbortAskedForEndsTheNextWaitWithoutAHang) {
  auto comm = Communicator::Create(api_.get(), Alone(), "set 0", 0, 0, 1,
                                   ShortLimits());
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  (*comm)->RequestAbort("the test asked");
  const common::Status status = (*comm)->AwaitIdle("allreduce");
  EXPECT_EQ(status.code(), Code::kAborted);
  EXPECT_TRUE((*comm)->failed());
  // Failed, it is kept for a shrink; closing it aborts it.
  EXPECT_TRUE((*comm)->Close().ok());
  EXPECT_FALSE((*comm)->open());
}

TEST_F(NcclGpuTest, ATwoRankInitWhosePeerNeverComesTimesOut) {
  CommunicatorLimits limits = ShortLimits();
  limits.setup = std::chrono::seconds(3);
  auto comm =
      Communicator::Create(api_.get(), Alone(), "set 0", 0, 0, 2, limits);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), Code::kTimeout) << comm.status().ToString();
}

// Host <-> device through the seam, waited for on the host (test setup).
void CopyAndWait(Api* api, void* to, const void* from, size_t bytes) {
  ASSERT_TRUE(api->Copy(to, from, bytes, nullptr).ok());
  auto event = api->CreateEvent(0);
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(api->Record(*event, nullptr).ok());
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  common::Result<bool> done = false;
  while ((done = api->Done(*event)).ok() && !*done &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  api->DestroyEvent(0, *event);
  ASSERT_TRUE(done.ok() && *done) << "the copy did not finish within 30 s";
}

// A one-rank runtime on this GPU gives what the same runtime gives for the
// same data in host memory: a fused, scaled allreduce and a broadcast.
TEST_F(NcclGpuTest, AOneRankRuntimeOnTheGpuMatchesTheHost) {
  RuntimeConfig config;
  config.stall_check = false;
  auto started = Runtime::Start(config);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Runtime& runtime = **started;
  const std::vector<std::vector<float>> inputs = {{1.5f, -2}, {3, 4, 0.25f}};
  std::vector<std::vector<float>> on_host = inputs;
  std::vector<void*> on_device;
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto memory = api_->Allocate(0, inputs[i].size() * sizeof(float));
    ASSERT_TRUE(memory.ok()) << memory.status().ToString();
    on_device.push_back(*memory);
    CopyAndWait(api_.get(), *memory, inputs[i].data(),
                inputs[i].size() * sizeof(float));
    TensorSpec spec;
    spec.name = "t" + std::to_string(i);
    spec.shape = {static_cast<int64_t>(inputs[i].size())};
    specs.push_back(spec);
  }
  AllreduceArgs args;
  args.op = ReduceOp::kSum;
  args.prescale = 0.5;
  args.postscale = 3;
  auto host =
      runtime.GroupedAllreduce(specs, {on_host[0].data(), on_host[1].data()},
                               {on_host[0].data(), on_host[1].data()}, args);
  ASSERT_TRUE(host.ok());
  for (TensorSpec& spec : specs) {
    spec.name += ".gpu";
    spec.device = 0;
  }
  auto gpu = runtime.GroupedAllreduce(specs, {on_device[0], on_device[1]},
                                      {on_device[0], on_device[1]}, args);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  for (Handle handle : *host) ASSERT_TRUE(runtime.Wait(handle)->status.ok());
  for (Handle handle : *gpu) {
    auto done = runtime.Wait(handle);
    ASSERT_TRUE(done.ok() && done->status.ok())
        << (done.ok() ? done->status : done.status()).ToString();
  }
  specs[0].name = "b";
  auto broadcast = runtime.Broadcast(specs[0], on_device[0], 0);
  ASSERT_TRUE(broadcast.ok());
  ASSERT_TRUE(runtime.Wait(*broadcast)->status.ok());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<float> back(inputs[i].size());
    CopyAndWait(api_.get(), back.data(), on_device[i],
                back.size() * sizeof(float));
    for (size_t k = 0; k < back.size(); ++k) {
      EXPECT_FLOAT_EQ(back[k], on_host[i][k])
          << "tensor " << i << "[" << k << "]";
    }
    api_->Free(0, on_device[i]);
  }
}

}  // namespace
}  // namespace hvd::runtime::nccl
