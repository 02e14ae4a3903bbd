#include "op_table.h"

#include <array>

#include "ops/nccl/executors.h"
#include "timeline.h"

namespace hvd::runtime {

namespace {

// In OpType's order (checked below).
constexpr std::array<OpInfo, kOpTypeCount> kOps{{
    {OpType::kAllreduce, "allreduce", kActivityAllreduce,
     kActivityNegotiateAllreduce, Agreement::kReduction, true, false, true,
     RunAllreduce, nullptr, nccl::RunNcclAllreduce, nullptr},
    {OpType::kAllgather, "allgather", kActivityAllgather,
     kActivityNegotiateAllgather, Agreement::kRows, true, true, false,
     RunAllgather, nullptr, nccl::RunNcclAllgather, nullptr},
    {OpType::kBroadcast, "broadcast", kActivityBroadcast,
     kActivityNegotiateBroadcast, Agreement::kRoot, true, false, false, nullptr,
     RunBroadcast, nullptr, nccl::RunNcclBroadcast},
    {OpType::kBarrier, "barrier", kActivityBarrier, kActivityNegotiateBarrier,
     Agreement::kNothing, false, false, true, nullptr, RunBarrier},
    {OpType::kAlltoall, "alltoall", kActivityAlltoall,
     kActivityNegotiateAlltoall, Agreement::kRows, true, true, false, nullptr,
     RunAlltoall, nullptr, nccl::RunNcclAlltoall},
    {OpType::kReducescatter, "reducescatter", kActivityReducescatter,
     kActivityNegotiateReducescatter, Agreement::kReduction, true, true, false,
     RunReducescatter, nullptr, nccl::RunNcclReducescatter, nullptr},
    {OpType::kJoin, "join", kActivityJoin, kActivityNegotiateJoin,
     Agreement::kNothing, false, false, false, nullptr, RunJoin},
    {OpType::kAddProcessSet, "add_process_set", kActivityAddProcessSet,
     kActivityNegotiateAddProcessSet, Agreement::kRanks, false, false, false,
     nullptr, nullptr},
    {OpType::kRemoveProcessSet, "remove_process_set", kActivityRemoveProcessSet,
     kActivityNegotiateRemoveProcessSet, Agreement::kSetId, false, false, false,
     nullptr, nullptr},
}};

constexpr bool InOpTypeOrder() {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (static_cast<size_t>(kOps[i].type) != i) return false;
  }
  return true;
}
static_assert(InOpTypeOrder(), "kOps must list OpType's values in order");

// Python hands CUDA tensors to every collective that moves data.
constexpr bool EveryPayloadRunsOnGpus() {
  for (const OpInfo& op : kOps) {
    if (op.payload && op.gpu_fused == nullptr && op.gpu_single == nullptr) {
      return false;
    }
  }
  return true;
}
static_assert(EveryPayloadRunsOnGpus(),
              "an op that moves tensors needs an NCCL executor");

}  // namespace

const OpInfo& OpInfoOf(OpType type) {
  return kOps.at(static_cast<size_t>(type));
}

}  // namespace hvd::runtime
