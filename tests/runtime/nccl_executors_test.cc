// The collectives on CUDA tensors without a GPU: the NCCL executors on
// lanes over fake GPUs (fake_gpus.h), one thread per rank. What is checked
// is what NCCL is asked to do (one call per fused unit, copies on hvd's
// stream, the scale folded into a pre-multiplied sum), that inputs are
// waited for on the device, and that a hung or failed peer ends every
// rank's wait with a status.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_gpus.h"
#include "ops/nccl/executors.h"
#include "ops/nccl/lane.h"

namespace hvd::runtime::nccl {
namespace {

using common::Code;
using common::Result;
using common::Status;

// ---- NcclReduction ----

Request Allreduce(ReduceOp op, DataType dtype, double prescale = 1.0,
                  double postscale = 1.0) {
  Request r;
  r.name = "grad";
  r.op = op;
  r.dtype = dtype;
  r.prescale = prescale;
  r.postscale = postscale;
  return r;
}

TEST(NcclReductionTest, UnscaledOpsRunAsNcclsOwn) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin,
                      ReduceOp::kMax, ReduceOp::kProduct}) {
    Result<Reduction> reduction =
        NcclReduction(Allreduce(op, DataType::kInt32), 4);
    ASSERT_TRUE(reduction.ok()) << reduction.status().message();
    EXPECT_EQ(reduction->op, op);
    EXPECT_EQ(reduction->premultiply, 1.0);
  }
}

TEST(NcclReductionTest, ScalesAndAveragesFoldIntoOnePremultipliedSum) {
  Result<Reduction> average = NcclReduction(
      Allreduce(ReduceOp::kAverage, DataType::kFloat16, 0.5, 3), 4);
  ASSERT_TRUE(average.ok());
  EXPECT_EQ(average->op, ReduceOp::kSum);
  EXPECT_DOUBLE_EQ(average->premultiply, 0.375);  // 0.5 * 3 / 4
  Result<Reduction> sum =
      NcclReduction(Allreduce(ReduceOp::kSum, DataType::kInt64, 2, 3), 4);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->op, ReduceOp::kSum);
  EXPECT_DOUBLE_EQ(sum->premultiply, 6);  // whole: fine for integers
}

TEST(NcclReductionTest, WhatNcclCannotComputeIsRefusedSayingWhatToDo) {
  Result<Reduction> min =
      NcclReduction(Allreduce(ReduceOp::kMin, DataType::kFloat32, 2), 2);
  ASSERT_FALSE(min.ok());
  EXPECT_EQ(min.status().code(), Code::kInvalidArgument);
  EXPECT_NE(min.status().message().find("op min"), std::string::npos);
  EXPECT_NE(min.status().message().find("scales only sums"), std::string::npos);
  Result<Reduction> ints =
      NcclReduction(Allreduce(ReduceOp::kAverage, DataType::kInt32, 1, 2), 4);
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("on int32: NCCL scales integer "
                                         "sums by whole numbers only"),
            std::string::npos)
      << ints.status().message();
  EXPECT_NE(ints.status().message().find("floating-point"), std::string::npos);
  EXPECT_FALSE(
      NcclReduction(Allreduce(ReduceOp::kSum, DataType::kInt32, 2.5), 4).ok());
  Result<Reduction> adasum =
      NcclReduction(Allreduce(ReduceOp::kAdasum, DataType::kFloat32), 2);
  ASSERT_FALSE(adasum.ok());
  EXPECT_NE(adasum.status().message().find("Adasum"), std::string::npos);
}

// ---- Executors over fake GPUs ----

// Rank 0's unique id for every rank, as the rendezvous store hands it out.
class IdBoard {
 public:
  IdExchange Exchange() {
    return [this](const UniqueId* made) -> Result<UniqueId> {
      std::unique_lock<std::mutex> lock(mu_);
      if (made != nullptr) {
        id_ = *made;
        cv_.notify_all();
        return *made;
      }
      if (!cv_.wait_for(lock, std::chrono::seconds(30),
                        [this] { return id_.has_value(); })) {
        return Status::Timeout("rank 0 published no NCCL id within 30 s");
      }
      return *id_;
    };
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<UniqueId> id_;
};

template <typename F>
void OnEveryRank(int size, F body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

// `size` ranks, each with a lane of process set 0 on its device 0, and
// device buffers the test fills and reads directly (fake device memory is
// host memory).
class NcclExecutorTest : public ::testing::Test {
 protected:
  void MakeLanes(
      int size, std::chrono::milliseconds op_limit = std::chrono::seconds(30)) {
    size_ = size;
    lanes_.resize(size);
    std::vector<Status> made(size);
    OnEveryRank(size, [&](int rank) {
      CommunicatorLimits limits;
      limits.op = op_limit;
      auto comm = Communicator::Create(gpus_.Rank(rank), board_.Exchange(),
                                       "set 0", 0, rank, size, limits);
      if (!comm.ok()) {
        made[rank] = comm.status();
        return;
      }
      // FakeGpus owns its ranks' seams.
      std::shared_ptr<Api> api(gpus_.Rank(rank), [](Api*) {});
      auto lane = Lane::Create(api, std::move(*comm));
      if (!lane.ok()) {
        made[rank] = lane.status();
        return;
      }
      lanes_[rank] = std::move(*lane);
    });
    for (const Status& status : made)
      ASSERT_TRUE(status.ok()) << status.message();
  }

  void TearDown() override {
    lanes_.clear();
    for (auto& cleanup : cleanups_) cleanup();
    for (auto& [rank, memory] : buffers_) gpus_.Rank(rank)->Free(0, memory);
    EXPECT_EQ(gpus_.live_allocations(), 0);
    EXPECT_EQ(gpus_.live_streams_and_events(), 0);
  }

  template <typename T>
  T* Device(int rank, const std::vector<T>& values) {
    Result<void*> memory =
        gpus_.Rank(rank)->Allocate(0, values.size() * sizeof(T));
    EXPECT_TRUE(memory.ok());
    buffers_.emplace_back(rank, *memory);
    std::copy(values.begin(), values.end(), static_cast<T*>(*memory));
    return static_cast<T*>(*memory);
  }

  static TensorEntry Entry(const std::string& name, Request r, int64_t count,
                           const void* input, void* output) {
    TensorEntry e;
    r.name = name;
    r.shape = {count};
    e.request = r;
    e.input = input;
    e.output = output;
    return e;
  }

  Backends On(int rank) {
    return Backends{nullptr, nullptr, lanes_[rank].get()};
  }

  Status Reduce(int rank, const std::vector<const TensorEntry*>& unit,
                std::vector<OpResult>* results) {
    return RunNcclAllreduce(On(rank), unit, {}, nullptr, results, nullptr);
  }

  static std::vector<const TensorEntry*> Unit(
      const std::vector<TensorEntry>& entries) {
    std::vector<const TensorEntry*> unit;
    for (const TensorEntry& e : entries) unit.push_back(&e);
    return unit;
  }

  FakeGpus gpus_;
  IdBoard board_;
  int size_ = 0;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<std::pair<int, void*>> buffers_;
  std::vector<std::function<void()>> cleanups_;
};

TEST_F(NcclExecutorTest, AFusedUnitIsOneNcclCallThroughTheDeviceBuffer) {
  MakeLanes(3);
  const Request average =
      Allreduce(ReduceOp::kAverage, DataType::kFloat32, 0.5, 4);
  std::vector<std::vector<float*>> outputs(3);
  std::vector<Status> statuses(3);
  std::vector<std::vector<TensorEntry>> units(3);
  for (int rank = 0; rank < 3; ++rank) {
    const float v = static_cast<float>(rank + 1);
    float* a = Device<float>(rank, {v, 10 * v});
    float* b = Device<float>(rank, {100 * v});
    float* b_out = Device<float>(rank, {0});
    float* c = Device<float>(rank, {-v, v, 2 * v});
    outputs[rank] = {a, b_out, c};
    units[rank] = {Entry("a", average, 2, a, a),
                   Entry("b", average, 1, b, b_out),
                   Entry("c", average, 3, c, c)};
  }
  OnEveryRank(3, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, Unit(units[rank]), &results);
    if (statuses[rank].ok() && results.size() != 3) {
      statuses[rank] = Status::Internal("results for every entry expected");
    }
  });
  // Average of 1, 2, 3 is 2; times 0.5 * 4.
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_FLOAT_EQ(outputs[rank][0][0], 4);
    EXPECT_FLOAT_EQ(outputs[rank][0][1], 40);
    EXPECT_FLOAT_EQ(outputs[rank][1][0], 400);
    EXPECT_FLOAT_EQ(outputs[rank][2][0], -4);
    EXPECT_FLOAT_EQ(outputs[rank][2][2], 8);
    const std::vector<std::string> expected = {
        "copy 8", "copy 4", "copy 12", "allreduce 6 float32 sum*0.666667",
        "copy 8", "copy 4", "copy 12"};
    EXPECT_EQ(gpus_.launches(rank), expected);
  }
}

TEST_F(NcclExecutorTest, OneTensorReducesInPlaceWithoutCopies) {
  MakeLanes(2);
  std::vector<int32_t*> tensors = {Device<int32_t>(0, {5, -1, 7}),
                                   Device<int32_t>(1, {3, 9, 7})};
  std::vector<Status> statuses(2);
  OnEveryRank(2, [&](int rank) {
    std::vector<TensorEntry> unit = {
        Entry("m", Allreduce(ReduceOp::kMax, DataType::kInt32), 3,
              tensors[rank], tensors[rank])};
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, Unit(unit), &results);
  });
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_EQ(std::vector<int32_t>(tensors[rank], tensors[rank] + 3),
              std::vector<int32_t>({5, 9, 7}));
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>({"allreduce 3 int32 max"}));
  }
}

// The producer (torch's stream) is still writing the input when hvd
// launches; the reduction must see what the producer wrote.
TEST_F(NcclExecutorTest, TheReduceWaitsOnTheDeviceForTheProducersEvent) {
  MakeLanes(2);
  std::vector<float*> tensors(2);
  std::vector<int> holds(2);
  std::vector<TensorEntry> entries(2);
  for (int rank = 0; rank < 2; ++rank) {
    Api* api = gpus_.Rank(rank);
    tensors[rank] = Device<float>(rank, {0, 0});
    const float* produced = Device<float>(rank, {1.0f + rank, 10});
    Result<Stream> producer = api->CreateStream(0);
    Result<Event> ready = api->CreateEvent(0);
    ASSERT_TRUE(producer.ok() && ready.ok());
    holds[rank] = gpus_.Hold(*producer);
    ASSERT_TRUE(api->Copy(tensors[rank], produced, 8, *producer).ok());
    ASSERT_TRUE(api->Record(*ready, *producer).ok());
    entries[rank] = Entry("late", Allreduce(ReduceOp::kSum, DataType::kFloat32),
                          2, tensors[rank], tensors[rank]);
    entries[rank].ready = std::shared_ptr<void>(*ready, [](void*) {});
    cleanups_.push_back([api, producer = *producer, ready = *ready] {
      api->DestroyEvent(0, ready);
      api->DestroyStream(0, producer);
    });
  }
  std::vector<Status> statuses(2);
  std::thread release([&] {
    // Both ranks have launched the reduce before the producers finish.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto launched = [&] {
      for (int rank = 0; rank < 2; ++rank) {
        const auto calls = gpus_.launches(rank);
        if (std::find(calls.begin(), calls.end(), "allreduce 2 float32 sum") ==
            calls.end()) {
          return false;
        }
      }
      return true;
    };
    while (!launched() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    for (int hold : holds) gpus_.Release(hold);
  });
  OnEveryRank(2, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, {&entries[rank]}, &results);
  });
  release.join();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_FLOAT_EQ(tensors[rank][0], 3);
    EXPECT_FLOAT_EQ(tensors[rank][1], 20);
  }
}

TEST_F(NcclExecutorTest, BroadcastFromAnyRootReachesEveryRank) {
  MakeLanes(3);
  std::vector<int64_t*> tensors(3);
  std::vector<TensorEntry> entries(3);
  Request r;
  r.type = OpType::kBroadcast;
  r.dtype = DataType::kInt64;
  r.root = 1;
  for (int rank = 0; rank < 3; ++rank) {
    tensors[rank] = Device<int64_t>(rank, {rank * 100, rank * 100 + 1});
    entries[rank] = Entry("w", r, 2, tensors[rank], tensors[rank]);
  }
  std::vector<OpResult> results(3);
  OnEveryRank(3, [&](int rank) {
    results[rank] = RunNcclBroadcast(On(rank), Response{}, entries[rank]);
  });
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results[rank].status.ok()) << results[rank].status.message();
    EXPECT_EQ(tensors[rank][0], 100);
    EXPECT_EQ(tensors[rank][1], 101);
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>({"broadcast 2 int64 root 1"}));
  }
}

// Rank r gives r rows of `a` (none from rank 0) and one of `b`; every rank
// gets them all in rank order, in device memory of its own: `a` by a
// broadcast from each rank that has rows, `b` by NCCL's allgather.
TEST_F(NcclExecutorTest, AllgatherTakesUnequalPartsByBroadcastsEqualOnesWhole) {
  MakeLanes(3);
  Request gather;
  gather.type = OpType::kAllgather;
  gather.dtype = DataType::kInt32;
  std::vector<Response> responses(2);
  responses[0].sizes = {0, 1, 2};
  responses[1].sizes = {1, 1, 1};
  std::vector<std::vector<TensorEntry>> units(3);
  std::vector<std::vector<OpResult>> results(3);
  std::vector<Status> statuses(3);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int32_t> a;
    for (int row = 0; row < rank; ++row) {
      a.push_back(10 * rank + row);
      a.push_back(-(10 * rank + row));
    }
    TensorEntry ea =
        Entry("a", gather, rank, Device<int32_t>(rank, a), nullptr);
    ea.request.shape = {rank, 2};
    TensorEntry eb =
        Entry("b", gather, 1, Device<int32_t>(rank, {rank}), nullptr);
    units[rank] = {ea, eb};
  }
  OnEveryRank(3, [&](int rank) {
    statuses[rank] = RunNcclAllgather(On(rank), Unit(units[rank]),
                                      {&responses[0], &responses[1]}, nullptr,
                                      &results[rank], nullptr);
  });
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    ASSERT_EQ(results[rank].size(), 2u);
    const OpResult& a = results[rank][0];
    EXPECT_EQ(a.shape, std::vector<int64_t>({3, 2}));
    const auto* got = static_cast<const int32_t*>(a.device_data.memory.get());
    EXPECT_EQ(std::vector<int32_t>(got, got + 6),
              std::vector<int32_t>({10, -10, 20, -20, 21, -21}));
    const OpResult& b = results[rank][1];
    EXPECT_EQ(b.shape, std::vector<int64_t>({3}));
    got = static_cast<const int32_t*>(b.device_data.memory.get());
    EXPECT_EQ(std::vector<int32_t>(got, got + 3),
              std::vector<int32_t>({0, 1, 2}));
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>({"broadcast 2 int32 root 1",
                                        "broadcast 4 int32 root 2",
                                        "allgather 1 int32"}));
  }
  results.clear();  // frees the outputs before TearDown counts
}

// Four ranks on two "hosts" (ranks 0-1 and 2-3): each lane gets a host
// communicator and a cross-host one, as the background loop gives them.
class NcclHierarchyTest : public NcclExecutorTest {
 protected:
  void MakeHierarchy() {
    MakeLanes(4);
    for (const char* board : {"local0", "local1", "cross0", "cross1"}) {
      boards_[board];  // made here: the threads only read the map
    }
    std::vector<Status> made(4);
    OnEveryRank(4, [&](int rank) {
      const int host = rank / 2;
      const int local_rank = rank % 2;
      auto local = Communicator::Create(
          gpus_.Rank(rank),
          boards_.at("local" + std::to_string(host)).Exchange(), "host", 0,
          local_rank, 2, {});
      auto cross = Communicator::Create(
          gpus_.Rank(rank),
          boards_.at("cross" + std::to_string(local_rank)).Exchange(), "cross",
          0, host, 2, {});
      if (!local.ok() || !cross.ok()) {
        made[rank] = local.ok() ? cross.status() : local.status();
        return;
      }
      lanes_[rank]->SetHierarchy({std::move(*local), std::move(*cross)});
    });
    for (const Status& status : made) {
      ASSERT_TRUE(status.ok()) << status.message();
    }
  }

  Backends Hierarchical(int rank) {
    return Backends{nullptr, nullptr, lanes_[rank].get(),
                    lanes_[rank]->hierarchy()};
  }

  std::map<std::string, IdBoard> boards_;
};

// 5 elements pad to 2 blocks of 3: a host reduce-scatter leaves each local
// rank its block reduced over the host, a cross-host allreduce reduces it
// over the job, a host allgather gives every rank both. The average's
// 1/size and the postscale fold into the first stage's factor.
TEST_F(NcclHierarchyTest, AllreduceGoesThroughTheHostThenAcrossHosts) {
  MakeHierarchy();
  const Request average =
      Allreduce(ReduceOp::kAverage, DataType::kFloat32, 1, 2);
  std::vector<std::vector<TensorEntry>> units(4);
  std::vector<std::vector<float*>> outputs(4);
  std::vector<Status> statuses(4);
  for (int rank = 0; rank < 4; ++rank) {
    const float v = static_cast<float>(rank + 1);
    float* a = Device<float>(rank, {v, 10 * v, 100 * v});
    float* b = Device<float>(rank, {-v, 2 * v});
    outputs[rank] = {a, b};
    units[rank] = {Entry("a", average, 3, a, a), Entry("b", average, 2, b, b)};
  }
  OnEveryRank(4, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = RunNcclAllreduce(Hierarchical(rank), Unit(units[rank]), {},
                                      nullptr, &results, nullptr);
  });
  // The average of 1..4 is 2.5, times 2.
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_EQ(std::vector<float>(outputs[rank][0], outputs[rank][0] + 3),
              std::vector<float>({5, 50, 500}));
    EXPECT_EQ(std::vector<float>(outputs[rank][1], outputs[rank][1] + 2),
              std::vector<float>({-5, 10}));
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>(
                  {"copy 12", "copy 8", "reducescatter 3 float32 sum*0.5",
                   "allreduce 3 float32 sum", "allgather 3 float32", "copy 12",
                   "copy 8"}));
  }
}

// Each stage of an integer average would truncate: it stays flat.
TEST_F(NcclHierarchyTest, AnIntegerAverageStaysFlat) {
  MakeHierarchy();
  std::vector<int32_t*> tensors(4);
  std::vector<TensorEntry> entries(4);
  for (int rank = 0; rank < 4; ++rank) {
    tensors[rank] = Device<int32_t>(rank, {rank});
    entries[rank] = Entry("i", Allreduce(ReduceOp::kAverage, DataType::kInt32),
                          1, tensors[rank], tensors[rank]);
  }
  std::vector<Status> statuses(4);
  OnEveryRank(4, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = RunNcclAllreduce(Hierarchical(rank), {&entries[rank]}, {},
                                      nullptr, &results, nullptr);
  });
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_EQ(*tensors[rank], 1);  // (0 + 1 + 2 + 3) / 4, truncated once
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>({"allreduce 1 int32 average"}));
  }
}

// Rank r's inputs hold r + 1 everywhere. `even` (6 rows over 3 ranks)
// goes through NCCL's reduce-scatter; `odd` (4 rows: 2, 1, 1) through a
// reduce to each rank of its block. One group; each rank's block lands in
// device memory of its own.
TEST_F(NcclExecutorTest, ReducescatterSplitsEvenBlocksWholeAndOddOnesByReduce) {
  MakeLanes(3);
  Request scatter = Allreduce(ReduceOp::kAverage, DataType::kFloat32, 1, 1.5);
  scatter.type = OpType::kReducescatter;
  std::vector<std::vector<TensorEntry>> units(3);
  std::vector<std::vector<OpResult>> results(3);
  std::vector<Status> statuses(3);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<float> even, odd;
    for (int i = 0; i < 6; ++i) even.push_back((rank + 1.0f) * (i + 1));
    for (int i = 0; i < 4; ++i) odd.push_back((rank + 1.0f) * (i + 1));
    units[rank] = {
        Entry("even", scatter, 6, Device<float>(rank, even), nullptr),
        Entry("odd", scatter, 4, Device<float>(rank, odd), nullptr)};
  }
  OnEveryRank(3, [&](int rank) {
    statuses[rank] = RunNcclReducescatter(On(rank), Unit(units[rank]), {},
                                          nullptr, &results[rank], nullptr);
  });
  // The average of 1, 2, 3 is 2, times the postscale 1.5: 3 times the
  // index; one premultiplied sum (1.5 / 3).
  const std::vector<std::vector<float>> even = {{3, 6}, {9, 12}, {15, 18}};
  const std::vector<std::vector<float>> odd = {{3, 6}, {9}, {12}};
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    ASSERT_EQ(results[rank].size(), 2u);
    const auto* got =
        static_cast<const float*>(results[rank][0].device_data.memory.get());
    EXPECT_EQ(results[rank][0].shape, std::vector<int64_t>({2}));
    EXPECT_EQ(std::vector<float>(got, got + 2), even[rank]);
    got = static_cast<const float*>(results[rank][1].device_data.memory.get());
    EXPECT_EQ(results[rank][1].shape,
              std::vector<int64_t>({rank == 0 ? 2 : 1}));
    EXPECT_EQ(std::vector<float>(got, got + odd[rank].size()), odd[rank]);
    EXPECT_EQ(gpus_.launches(rank),
              std::vector<std::string>({"reducescatter 2 float32 sum*0.5",
                                        "reduce 2 float32 sum*0.5 root 0",
                                        "reduce 1 float32 sum*0.5 root 1",
                                        "reduce 1 float32 sum*0.5 root 2"}));
  }
  results.clear();
}

// Rank s sends (s + r) % 3 rows to rank r, so some pairs move nothing:
// those have neither a send nor a receive. Rows are two int64 wide and
// say who sent them.
TEST_F(NcclExecutorTest, AlltoallSendsEachPeerItsRowsInOneGroup) {
  MakeLanes(3);
  Request a2a;
  a2a.type = OpType::kAlltoall;
  a2a.dtype = DataType::kInt64;
  Response response;
  for (int s = 0; s < 3; ++s) {
    for (int r = 0; r < 3; ++r) response.sizes.push_back((s + r) % 3);
  }
  std::vector<TensorEntry> entries(3);
  std::vector<OpResult> results(3);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int64_t> rows;
    for (int to = 0; to < 3; ++to) {
      for (int k = 0; k < (rank + to) % 3; ++k) {
        rows.push_back(100 * rank + to);
        rows.push_back(k);
      }
    }
    entries[rank] = Entry("x", a2a, 3, Device<int64_t>(rank, rows), nullptr);
    entries[rank].request.shape = {3, 2};
  }
  OnEveryRank(3, [&](int rank) {
    results[rank] = RunNcclAlltoall(On(rank), response, entries[rank]);
  });
  for (int rank = 0; rank < 3; ++rank) {
    const OpResult& result = results[rank];
    ASSERT_TRUE(result.status.ok()) << result.status.message();
    std::vector<int64_t> expected, sizes;
    for (int from = 0; from < 3; ++from) {
      sizes.push_back((from + rank) % 3);
      for (int k = 0; k < (from + rank) % 3; ++k) {
        expected.push_back(100 * from + rank);
        expected.push_back(k);
      }
    }
    EXPECT_EQ(result.sizes, sizes);
    EXPECT_EQ(result.shape, std::vector<int64_t>({3, 2}));
    const auto* got =
        static_cast<const int64_t*>(result.device_data.memory.get());
    EXPECT_EQ(std::vector<int64_t>(got, got + 6), expected);
  }
  // Rank 1 sends 1 row to 0 and 2 to 1 (itself), receives 1 from 0 and 2
  // from itself; nothing moves between ranks 1 and 2.
  EXPECT_EQ(
      gpus_.launches(1),
      std::vector<std::string>({"send 2 int64 to 0", "recv 2 int64 from 0",
                                "send 4 int64 to 1", "recv 4 int64 from 1"}));
  results.clear();
}

TEST_F(NcclExecutorTest, AHungPeerEndsTheOthersWaitAtTheDeadline) {
  MakeLanes(3, std::chrono::milliseconds(300));
  std::vector<Status> statuses(3);
  std::vector<TensorEntry> entries(3);
  for (int rank = 0; rank < 2; ++rank) {
    float* t = Device<float>(rank, {1});
    entries[rank] =
        Entry("g", Allreduce(ReduceOp::kSum, DataType::kFloat32), 1, t, t);
  }
  OnEveryRank(2, [&](int rank) {  // rank 2 never comes
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, {&entries[rank]}, &results);
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(statuses[rank].code(), Code::kTimeout);
    EXPECT_NE(statuses[rank].message().find("allreduce 'g' on set 0"),
              std::string::npos)
        << statuses[rank].message();
    EXPECT_TRUE(lanes_[rank]->communicator().failed());
    lanes_[rank].reset();  // kept for a shrink until given up: an abort
    EXPECT_EQ(gpus_.launches(rank).back(), "abort");
  }
}

TEST_F(NcclExecutorTest, NcclsAsyncErrorFailsTheUnitAsATransportError) {
  MakeLanes(2, std::chrono::milliseconds(300));
  gpus_.FailRank(1, Status::Transport("an NCCL operation failed: remote "
                                      "process exited"));
  std::vector<Status> statuses(2);
  std::vector<TensorEntry> entries(2);
  for (int rank = 0; rank < 2; ++rank) {
    float* t = Device<float>(rank, {1});
    entries[rank] =
        Entry("g", Allreduce(ReduceOp::kSum, DataType::kFloat32), 1, t, t);
  }
  OnEveryRank(2, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, {&entries[rank]}, &results);
  });
  EXPECT_EQ(statuses[1].code(), Code::kTransport);
  EXPECT_NE(statuses[1].message().find("remote process exited"),
            std::string::npos);
  EXPECT_TRUE(lanes_[1]->communicator().failed());
  // Rank 0's wait ended too (OnEveryRank returned): rank 1 launched its
  // part before its error showed, as NCCL may.
}

TEST_F(NcclExecutorTest, AScaleNcclCannotApplyFailsEveryRankBeforeALaunch) {
  MakeLanes(2);
  std::vector<Status> statuses(2);
  std::vector<TensorEntry> entries(2);
  for (int rank = 0; rank < 2; ++rank) {
    float* t = Device<float>(rank, {1});
    entries[rank] = Entry(
        "g", Allreduce(ReduceOp::kProduct, DataType::kFloat32, 2), 1, t, t);
  }
  OnEveryRank(2, [&](int rank) {
    std::vector<OpResult> results;
    statuses[rank] = Reduce(rank, {&entries[rank]}, &results);
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(statuses[rank].code(), Code::kInvalidArgument);
    EXPECT_TRUE(gpus_.launches(rank).empty());
    EXPECT_FALSE(lanes_[rank]->communicator().failed());
  }
}

}  // namespace
}  // namespace hvd::runtime::nccl
