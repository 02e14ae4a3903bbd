#include "ops/op_table.h"

#include <array>

#include "negotiation/op_info.h"
#include "ops/nccl/executors.h"

namespace hvd::runtime {

namespace {

// In OpType's order (checked below).
constexpr std::array<OpExecutors, kOpTypeCount> kExecutors{{
    {OpType::kAllreduce, RunAllreduce, nullptr, nccl::RunNcclAllreduce,
     nullptr},
    {OpType::kAllgather, RunAllgather, nullptr, nccl::RunNcclAllgather,
     nullptr},
    {OpType::kBroadcast, nullptr, RunBroadcast, nullptr,
     nccl::RunNcclBroadcast},
    {OpType::kBarrier, nullptr, RunBarrier},
    {OpType::kAlltoall, nullptr, RunAlltoall, nullptr, nccl::RunNcclAlltoall},
    {OpType::kReducescatter, RunReducescatter, nullptr,
     nccl::RunNcclReducescatter, nullptr},
    {OpType::kJoin, nullptr, RunJoin},
    {OpType::kAddProcessSet, nullptr, nullptr},
    {OpType::kRemoveProcessSet, nullptr, nullptr},
}};

static_assert(InOpTypeOrder(kExecutors),
              "kExecutors must list OpType's values in order");

}  // namespace

const OpExecutors& OpExecutorsOf(OpType type) {
  return kExecutors.at(static_cast<size_t>(type));
}

}  // namespace hvd::runtime
