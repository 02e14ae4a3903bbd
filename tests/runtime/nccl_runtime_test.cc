// CUDA tensors through a real one-rank Runtime on fake GPUs (fake_gpus.h):
// the request path (device in the request, the producer's ready event, what
// NCCL cannot compute refused), the background loop (the set's lane
// made at its first GPU collective, host and device tensors never fused)
// and the lane's clean close at shutdown; an elastic reset of ranks as
// threads, whose survivors shrink the communicator the failed generation
// left. And, on this machine's own CUDA runtime, the error a CUDA tensor
// gets where no GPU is usable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_gpus.h"
#include "hvd/rendezvous/server.h"
#include "hvd/runtime/runtime.h"
#include "ops/nccl/gpus.h"
#include "runtime/worker_key_for_tests.h"

namespace hvd::runtime::nccl {
namespace {

using common::Result;
using common::Status;

class NcclRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeConfig config;  // one rank, no rendezvous
    config.stall_check = false;
    auto started = Runtime::Start(config, 0, {}, nullptr, std::nullopt,
                                  std::make_shared<Gpus>(gpus_.Loader(0)));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    runtime_ = std::move(*started);
  }

  float* Device(std::vector<float> values) {
    Result<void*> memory = gpus_.Rank(0)->Allocate(0, values.size() * 4);
    EXPECT_TRUE(memory.ok());
    std::copy(values.begin(), values.end(), static_cast<float*>(*memory));
    buffers_.push_back(*memory);
    return static_cast<float*>(*memory);
  }

  static TensorSpec Cuda(const std::string& name, int64_t count) {
    TensorSpec spec;
    spec.name = name;
    spec.shape = {count};
    spec.device = 0;
    return spec;
  }

  void TearDown() override {
    runtime_.reset();
    for (void* memory : buffers_) gpus_.Rank(0)->Free(0, memory);
    EXPECT_EQ(gpus_.live_allocations(), 0) << "the lane's buffer outlived it";
    EXPECT_EQ(gpus_.live_streams_and_events(), 0)
        << "a stream or an event outlived the runtime";
  }

  FakeGpus gpus_;
  std::unique_ptr<Runtime> runtime_;
  std::vector<void*> buffers_;
};

TEST_F(NcclRuntimeTest, AGroupOfCudaTensorsIsOneNcclCallBesideTheHostOnes) {
  float* a = Device({1, 2});
  float* b = Device({3, 4, 5});
  std::vector<float> host = {6, 7};
  AllreduceArgs sum;
  sum.op = ReduceOp::kSum;
  sum.postscale = 2;
  auto group = runtime_->GroupedAllreduce({Cuda("a", 2), Cuda("b", 3)}, {a, b},
                                          {a, b}, sum);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  TensorSpec host_spec;
  host_spec.name = "host";
  host_spec.shape = {2};
  auto on_host = runtime_->Allreduce(host_spec, host.data(), host.data(), sum);
  ASSERT_TRUE(on_host.ok());
  for (Handle handle : *group) {
    auto done = runtime_->Wait(handle);
    ASSERT_TRUE(done.ok() && done->status.ok())
        << (done.ok() ? done->status : done.status()).ToString();
  }
  ASSERT_TRUE(runtime_->Wait(*on_host).ok());
  // One rank: the sum is the tensor, times the postscale.
  EXPECT_EQ(std::vector<float>(a, a + 2), std::vector<float>({2, 4}));
  EXPECT_EQ(std::vector<float>(b, b + 3), std::vector<float>({6, 8, 10}));
  EXPECT_EQ(host, std::vector<float>({12, 14}));
  EXPECT_EQ(gpus_.launches(0),
            std::vector<std::string>({"copy 8", "copy 12",
                                      "allreduce 5 float32 sum*2", "copy 8",
                                      "copy 12"}));
}

TEST_F(NcclRuntimeTest, AllgatherGivesDeviceMemoryTheResultOwns) {
  float* a = Device({1, 2, 3, 4});
  TensorSpec spec = Cuda("a", 2);
  spec.shape = {2, 2};
  auto handle = runtime_->Allgather(spec, a);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  auto done = runtime_->Wait(*handle);
  ASSERT_TRUE(done.ok() && done->status.ok());
  EXPECT_EQ(done->data, nullptr);
  EXPECT_EQ(done->shape, std::vector<int64_t>({2, 2}));
  ASSERT_EQ(done->device_data.bytes, 16u);
  EXPECT_EQ(done->device_data.device, 0);
  EXPECT_EQ(gpus_.launches(0),
            std::vector<std::string>({"allgather 4 float32"}));
  // A user keeps a gathered tensor across hvd.shutdown() (an elastic
  // reset): its memory, and the seam that frees it, outlive the runtime.
  OpResult kept = std::move(*done);
  runtime_.reset();
  const auto* out = static_cast<const float*>(kept.device_data.memory.get());
  EXPECT_EQ(std::vector<float>(out, out + 4), std::vector<float>({1, 2, 3, 4}));
  const int live = gpus_.live_allocations();
  kept.device_data = {};
  EXPECT_EQ(gpus_.live_allocations(), live - 1) << "the result's memory";
}

TEST_F(NcclRuntimeTest, BroadcastAlltoallAndReducescatterRunOnTheLane) {
  float* w = Device({9, 8});
  auto handle = runtime_->Broadcast(Cuda("w", 2), w, 0);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  auto done = runtime_->Wait(*handle);
  ASSERT_TRUE(done.ok() && done->status.ok());
  auto exchanged = runtime_->Alltoall(Cuda("a", 2), w, {2});
  ASSERT_TRUE(exchanged.ok()) << exchanged.status().ToString();
  done = runtime_->Wait(*exchanged);
  ASSERT_TRUE(done.ok() && done->status.ok());
  EXPECT_EQ(done->sizes, std::vector<int64_t>({2}));
  const auto* rows = static_cast<const float*>(done->device_data.memory.get());
  EXPECT_EQ(std::vector<float>(rows, rows + 2), std::vector<float>({9, 8}));
  AllreduceArgs sum;
  sum.op = ReduceOp::kSum;
  auto scattered = runtime_->Reducescatter(Cuda("s", 2), w, sum);
  ASSERT_TRUE(scattered.ok()) << scattered.status().ToString();
  done = runtime_->Wait(*scattered);
  ASSERT_TRUE(done.ok() && done->status.ok());
  EXPECT_EQ(done->shape, std::vector<int64_t>({2}));
  ASSERT_EQ(done->device_data.bytes, 8u);
  done = common::Status::Internal("results dropped");  // frees their memory
  // An orderly shutdown closes the communicator cleanly, not by abort.
  runtime_.reset();
  EXPECT_EQ(gpus_.launches(0),
            std::vector<std::string>(
                {"broadcast 2 float32 root 0", "send 2 float32 to 0",
                 "recv 2 float32 from 0", "reducescatter 2 float32 sum",
                 "finalize", "destroy"}));
}

// Refused at enqueue, on the caller's thread, so the runtime goes on.
TEST_F(NcclRuntimeTest, WhatNcclCannotRunIsRefusedAtOnceAndTheRuntimeGoesOn) {
  float* x = Device({1, 2});
  AllreduceArgs scaled_max;
  scaled_max.op = ReduceOp::kMax;
  scaled_max.postscale = 2;
  auto refused = runtime_->Allreduce(Cuda("m", 2), x, x, scaled_max);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("NCCL scales only sums"),
            std::string::npos)
      << refused.status().message();
  AllreduceArgs adasum;
  adasum.op = ReduceOp::kAdasum;
  auto no_adasum = runtime_->Reducescatter(Cuda("r", 2), x, adasum);
  ASSERT_FALSE(no_adasum.ok());
  EXPECT_NE(no_adasum.status().message().find(
                "reducescatter 'r' of a CUDA tensor with op adasum: hvd runs "
                "Adasum on CPU tensors only"),
            std::string::npos)
      << no_adasum.status().message();
  auto first = runtime_->Allreduce(Cuda("x", 2), x, x, {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  TensorSpec elsewhere = Cuda("y", 2);
  elsewhere.device = 1;
  auto other = runtime_->Allreduce(elsewhere, x, x, {});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(
                "allreduce 'y': a tensor on cuda:1, but this rank's "
                "collectives in process set 0 run on cuda:0"),
            std::string::npos)
      << other.status().message();
  auto done = runtime_->Wait(*first);
  ASSERT_TRUE(done.ok() && done->status.ok());
  EXPECT_EQ(std::vector<float>(x, x + 2), std::vector<float>({1, 2}));
}

TEST_F(NcclRuntimeTest, ADeviceThisProcessDoesNotSeeIsRefusedAtOnce) {
  float* x = Device({1});
  TensorSpec spec = Cuda("x", 1);
  spec.device = 3;
  auto handle = runtime_->Allreduce(spec, x, x, {});
  ASSERT_FALSE(handle.ok());
  EXPECT_NE(handle.status().message().find(
                "device 3, but this process sees 2 CUDA device(s)"),
            std::string::npos)
      << handle.status().message();
}

// ---- Jobs of several ranks: threads of this process ----

// A job's ranks, each a Runtime on a thread of this process with its own
// Gpus over the shared fake GPUs (kept across generations, as the
// ElasticWorker keeps them), through a real rendezvous server; elastic.
class NcclJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rendezvous::ServerOptions options;
    options.secret = "nccl-reset-test";
    auto server = rendezvous::RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  std::shared_ptr<Gpus>& GpusOf(int slot) {
    auto& gpus = gpus_[slot];
    if (!gpus) gpus = std::make_shared<Gpus>(fake_.Loader(slot));
    return gpus;
  }

  // Starts generation `generation` with `slots` (slot s is rank s of the
  // fake GPUs, whatever its rank in the generation), `local_size` ranks
  // per host, and runs one allreduce of a CUDA tensor holding slot + 1 on
  // each; returns every rank's sum.
  std::vector<float> Generation(int64_t generation,
                                const std::vector<int>& slots,
                                int local_size = 1) {
    const int size = static_cast<int>(slots.size());
    runtimes_.clear();
    runtimes_.resize(size);
    std::vector<float> sums(size, -1);
    for (int slot : slots) GpusOf(slot);  // made here: the threads only read
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank) {
      threads.emplace_back([&, rank] {
        common::RankLayout layout;
        layout.rank = rank;
        layout.size = size;
        layout.local_rank = rank % local_size;
        layout.local_size = local_size;
        layout.cross_rank = rank / local_size;
        layout.cross_size = size / local_size;
        Status status = RunRank(generation, layout, slots[rank], &sums[rank]);
        if (!status.ok()) {
          ADD_FAILURE() << "rank " << rank << ": " << status.ToString();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return sums;
  }

  Status RunRank(int64_t generation, const common::RankLayout& layout, int slot,
                 float* sum) {
    RuntimeConfig config;
    config.rendezvous_addr = "127.0.0.1";
    config.rendezvous_port = server_->port();
    config.hostname = "127.0.0.1";
    config.layout = layout;
    hvd::testing::GiveWorkerKey(config, "nccl-reset-test", 1 + slot);
    config.elastic = true;
    config.nccl_shrink = nccl_shrink_;
    config.stall_check = false;
    config.start_timeout = std::chrono::seconds(30);
    auto started = Runtime::Start(config, generation, {}, nullptr, std::nullopt,
                                  gpus_.at(slot));
    if (!started.ok()) return started.status();
    runtimes_[layout.rank] = std::move(*started);
    Runtime& runtime = *runtimes_[layout.rank];
    Result<void*> memory = fake_.Rank(slot)->Allocate(0, sizeof(float));
    if (!memory.ok()) return memory.status();
    auto* x = static_cast<float*>(*memory);
    *x = static_cast<float>(slot + 1);
    TensorSpec spec;
    spec.name = "g";
    spec.shape = {1};
    spec.device = 0;
    AllreduceArgs args;
    args.op = ReduceOp::kSum;
    auto handle = runtime.Allreduce(spec, x, x, args);
    auto done =
        handle.ok() ? runtime.Wait(*handle) : Result<OpResult>(handle.status());
    Status status = done.ok() ? done->status : done.status();
    if (status.ok()) *sum = *x;
    fake_.Rank(slot)->Free(0, *memory);
    return status;
  }

  // The generation fails, as when the driver pushes Abort after a death.
  void Fail() {
    for (auto& runtime : runtimes_) {
      if (runtime) runtime->Abort("worker 2 died");
    }
    runtimes_.clear();
  }

  FakeGpus fake_;
  std::unique_ptr<rendezvous::RendezvousServer> server_;
  std::map<int, std::shared_ptr<Gpus>> gpus_;
  std::vector<std::unique_ptr<Runtime>> runtimes_;
  bool nccl_shrink_ = true;  // HVD_NCCL_SHRINK
};

TEST_F(NcclJobTest, SurvivorsShrinkTheCommunicatorTheFailedGenerationLeft) {
  EXPECT_EQ(Generation(1, {0, 1, 2}), std::vector<float>({6, 6, 6}));
  Fail();
  gpus_.erase(2);  // slot 2 is gone: its process ended
  EXPECT_EQ(Generation(2, {0, 1}), std::vector<float>({3, 3}));
  for (int slot : {0, 1}) {
    EXPECT_EQ(fake_.inits(slot), 1) << "slot " << slot << " made a new one";
    const auto calls = fake_.launches(slot);
    EXPECT_NE(std::find(calls.begin(), calls.end(), "shrink -2 abort"),
              calls.end())
        << "slot " << slot;
  }
  // Each generation's end parks the lane; the process's last shutdown
  // gives it up.
  runtimes_.clear();
  gpus_.clear();
  EXPECT_EQ(fake_.launches(0).back(), "abort");
}

// An orderly reset (a HostsUpdated) with every rank back: the communicator
// serves the next generation as it is.
TEST_F(NcclJobTest, EveryRankBackAfterAnOrderlyResetKeepsTheCommunicator) {
  EXPECT_EQ(Generation(1, {0, 1}), std::vector<float>({3, 3}));
  runtimes_.clear();  // an orderly shutdown, as hvd.elastic's reset does
  EXPECT_EQ(Generation(2, {0, 1}), std::vector<float>({3, 3}));
  for (int slot : {0, 1}) {
    EXPECT_EQ(fake_.inits(slot), 1) << "slot " << slot;
    EXPECT_EQ(fake_.launches(slot),
              std::vector<std::string>(
                  {"allreduce 1 float32 sum", "allreduce 1 float32 sum"}));
  }
  runtimes_.clear();
}

// HVD_NCCL_SHRINK=0: every generation makes its own communicator.
TEST_F(NcclJobTest, WithShrinkingOffAResetMakesANewCommunicator) {
  EXPECT_EQ(Generation(1, {0, 1}), std::vector<float>({3, 3}));
  runtimes_.clear();
  nccl_shrink_ = false;
  EXPECT_EQ(Generation(2, {0, 1}), std::vector<float>({3, 3}));
  for (int slot : {0, 1}) {
    EXPECT_EQ(fake_.inits(slot), 2) << "slot " << slot;
    const auto calls = fake_.launches(slot);
    EXPECT_NE(std::find(calls.begin(), calls.end(), "abort"), calls.end());
  }
  runtimes_.clear();
}

// A HostsUpdated that removed slot 2's host: its generation ended in order,
// so the survivors shrink without aborting anything first.
TEST_F(NcclJobTest, ARemovedRankIsShrunkAwayAfterAnOrderlyReset) {
  EXPECT_EQ(Generation(1, {0, 1, 2}), std::vector<float>({6, 6, 6}));
  runtimes_.clear();
  gpus_.erase(2);  // the removed worker exits
  EXPECT_EQ(Generation(2, {0, 1}), std::vector<float>({3, 3}));
  for (int slot : {0, 1}) {
    EXPECT_EQ(fake_.inits(slot), 1) << "slot " << slot;
    const auto calls = fake_.launches(slot);
    EXPECT_NE(std::find(calls.begin(), calls.end(), "shrink -2"), calls.end())
        << "slot " << slot;
  }
  runtimes_.clear();
}

// Alone, the survivor has nobody to agree with: it drops the old one and
// makes a communicator of one.
TEST_F(NcclJobTest, ALoneSurvivorDropsTheOldCommunicatorForItsOwn) {
  EXPECT_EQ(Generation(1, {0, 1}), std::vector<float>({3, 3}));
  Fail();
  gpus_.erase(1);
  EXPECT_EQ(Generation(2, {0}), std::vector<float>({1}));
  EXPECT_EQ(fake_.inits(0), 2);
  const auto calls = fake_.launches(0);
  EXPECT_NE(std::find(calls.begin(), calls.end(), "abort"), calls.end());
  runtimes_.clear();
}

// Two hosts of two ranks: the allreduce goes through the host's
// communicator, then across hosts, then back through the host's.
TEST_F(NcclJobTest, TwoHostsOfTwoRanksReduceHierarchically) {
  EXPECT_EQ(Generation(1, {0, 1, 2, 3}, 2),
            std::vector<float>({10, 10, 10, 10}));
  for (int slot = 0; slot < 4; ++slot) {
    EXPECT_EQ(fake_.inits(slot), 3) << "the set's, the host's, the cross";
    EXPECT_EQ(fake_.launches(slot),
              std::vector<std::string>({"copy 4", "reducescatter 1 float32 sum",
                                        "allreduce 1 float32 sum",
                                        "allgather 1 float32", "copy 4"}))
        << "slot " << slot;
  }
  runtimes_.clear();
}

// A newcomer has no part in the old communicator: every member drops its
// own (abort) and they make a new one from rank 0's id.
TEST_F(NcclJobTest, ANewcomerMeansANewCommunicatorForEveryone) {
  EXPECT_EQ(Generation(1, {0, 1}), std::vector<float>({3, 3}));
  Fail();
  EXPECT_EQ(Generation(2, {0, 1, 2}), std::vector<float>({6, 6, 6}));
  for (int slot : {0, 1}) {
    EXPECT_EQ(fake_.inits(slot), 2) << "slot " << slot;
    const auto calls = fake_.launches(slot);
    EXPECT_NE(std::find(calls.begin(), calls.end(), "abort"), calls.end());
    for (const std::string& call : calls) {
      EXPECT_EQ(call.find("shrink"), std::string::npos) << call;
    }
  }
  runtimes_.clear();
}

// This machine's own CUDA runtime and NCCL, as a user's CUDA tensor meets
// them: on a machine without a GPU (or a build without NCCL) the error
// names the cause; with a GPU the collective runs.
TEST(NcclSystemRuntimeTest, ACudaTensorWithoutAUsableGpuSaysWhy) {
  RuntimeConfig config;
  config.stall_check = false;
  auto started = Runtime::Start(config);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  float host = 1;
  TensorSpec spec;
  spec.name = "x";
  spec.shape = {1};
  spec.device = 0;
  auto handle = (*started)->Allreduce(spec, &host, &host, {});
  if (BuiltNcclVersion() == 0) {
    ASSERT_FALSE(handle.ok());
    EXPECT_NE(handle.status().message().find("built without NCCL"),
              std::string::npos)
        << handle.status().message();
  } else if (access("/dev/nvidia0", F_OK) != 0) {
    ASSERT_FALSE(handle.ok());
    EXPECT_NE(handle.status().message().find(
                  "allreduce 'x': a CUDA tensor: no CUDA device is usable "
                  "here: cudaGetDeviceCount says"),
              std::string::npos)
        << handle.status().message();
  } else {
    GTEST_SKIP() << "a GPU is here: tests/gpu/ runs CUDA tensors";
  }
}

}  // namespace
}  // namespace hvd::runtime::nccl
