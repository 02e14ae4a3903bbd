#include "negotiation/op_info.h"

#include <array>

#include "tuning/timeline.h"

namespace hvd::runtime {

namespace {

// In OpType's order (checked below).
constexpr std::array<OpInfo, kOpTypeCount> kOps{{
    {OpType::kAllreduce, "allreduce", kActivityAllreduce,
     kActivityNegotiateAllreduce, Agreement::kReduction, true, false, true},
    {OpType::kAllgather, "allgather", kActivityAllgather,
     kActivityNegotiateAllgather, Agreement::kRows, true, true, false},
    {OpType::kBroadcast, "broadcast", kActivityBroadcast,
     kActivityNegotiateBroadcast, Agreement::kRoot, true, false, false},
    {OpType::kBarrier, "barrier", kActivityBarrier, kActivityNegotiateBarrier,
     Agreement::kNothing, false, false, true},
    {OpType::kAlltoall, "alltoall", kActivityAlltoall,
     kActivityNegotiateAlltoall, Agreement::kRows, true, true, false},
    {OpType::kReducescatter, "reducescatter", kActivityReducescatter,
     kActivityNegotiateReducescatter, Agreement::kReduction, true, true, false},
    {OpType::kJoin, "join", kActivityJoin, kActivityNegotiateJoin,
     Agreement::kNothing, false, false, false},
    {OpType::kAddProcessSet, "add_process_set", kActivityAddProcessSet,
     kActivityNegotiateAddProcessSet, Agreement::kRanks, false, false, false},
    {OpType::kRemoveProcessSet, "remove_process_set", kActivityRemoveProcessSet,
     kActivityNegotiateRemoveProcessSet, Agreement::kSetId, false, false,
     false},
}};

static_assert(InOpTypeOrder(kOps), "kOps must list OpType's values in order");

}  // namespace

const OpInfo& OpInfoOf(OpType type) {
  return kOps.at(static_cast<size_t>(type));
}

}  // namespace hvd::runtime
