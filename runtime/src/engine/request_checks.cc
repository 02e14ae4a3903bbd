#include "engine/request_checks.h"

#include <algorithm>

#include "negotiation/op_info.h"
#include "ops/adasum.h"
#include "ops/nccl/executors.h"

namespace hvd::runtime {

using common::Status;

namespace {

// Alltoall splits: equal parts when none are given, else one per member,
// none negative, adding up to dimension 0.
Status CheckSplits(const ProcessSet& set, const std::string& what, Request* r) {
  const int64_t rows = r->shape[0];
  const int size = set.size();
  if (r->splits.empty()) {
    if (rows % size != 0) {
      return Status::InvalidArgument(
          what + ": dimension 0 (" + std::to_string(rows) +
          ") does not divide into " + std::to_string(size) +
          " equal parts; pass splits");
    }
    r->splits.assign(size, rows / size);
    return Status::Ok();
  }
  if (static_cast<int>(r->splits.size()) != size) {
    return Status::InvalidArgument(
        what + ": " + std::to_string(r->splits.size()) + " splits for " +
        std::to_string(size) + " ranks");
  }
  int64_t sum = 0;
  for (int64_t split : r->splits) {
    if (split < 0) return Status::InvalidArgument(what + ": negative split");
    sum += split;
  }
  if (sum != rows) {
    return Status::InvalidArgument(
        what + ": splits add up to " + std::to_string(sum) +
        ", but dimension 0 is " + std::to_string(rows));
  }
  return Status::Ok();
}

}  // namespace

Status CheckRequest(const ProcessSet& set, int world_size, Request* r) {
  const std::string what =
      r->name.empty() ? std::string("unnamed ") + OpTypeName(r->type)
                      : std::string(OpTypeName(r->type)) + " '" + r->name + "'";
  if (static_cast<int>(r->dtype) >= kDataTypeCount) {
    return Status::InvalidArgument(what + ": unsupported data type");
  }
  for (int64_t dim : r->shape) {
    if (dim < 0) return Status::InvalidArgument(what + ": negative dimension");
  }
  const OpInfo& op = OpInfoOf(r->type);
  if (r->device >= 0 && op.agreement == Agreement::kReduction) {
    Status nccl_can = nccl::NcclReduction(*r, set.size()).status();
    if (!nccl_can.ok()) return nccl_can;
  }
  if (op.needs_rows && r->shape.empty()) {
    return Status::InvalidArgument(
        what + ": " + OpTypeName(r->type) +
        " needs at least one dimension to split or concatenate along; "
        "reshape a scalar to [1]");
  }
  if (r->type == OpType::kReducescatter && r->op != ReduceOp::kSum &&
      r->op != ReduceOp::kAverage && r->op != ReduceOp::kAdasum) {
    return Status::InvalidArgument(what +
                                   ": reducescatter supports Sum, Average "
                                   "and Adasum only");
  }
  if (r->op == ReduceOp::kAdasum && op.agreement == Agreement::kReduction &&
      !AdasumSupports(r->dtype)) {
    return Status::InvalidArgument(
        what +
        ": op Adasum needs a floating-point tensor (float16, "
        "float32 or float64), got " +
        DataTypeName(r->dtype) + "; use op Sum or Average for integers");
  }
  if (r->type == OpType::kBroadcast) {
    auto at = std::find(set.ranks.begin(), set.ranks.end(), r->root);
    if (at == set.ranks.end()) {
      std::vector<int64_t> ranks(set.ranks.begin(), set.ranks.end());
      return Status::InvalidArgument(
          what + ": root rank " + std::to_string(r->root) + " is not in " +
          (set.id == 0 ? "[0, " + std::to_string(world_size) + ")"
                       : "process set " + std::to_string(set.id) + " " +
                             RanksString(ranks)));
    }
    r->root = static_cast<int32_t>(at - set.ranks.begin());
  }
  if (r->type == OpType::kAlltoall) return CheckSplits(set, what, r);
  return Status::Ok();
}

}  // namespace hvd::runtime
