// The negotiation messages between workers and the coordinator (rank 0), and
// their compact binary encoding: little-endian integers, length-prefixed
// strings, no field names. A Request says "this rank is ready to run this
// collective"; a Response says "every rank is ready: run it" or "the ranks
// disagree: fail it".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"

namespace hvd::runtime {

struct Request {
  OpType type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  std::string name;
  std::vector<int64_t> shape;
  // Alltoall: rows of dimension 0 sent to each rank of the set, in set rank
  // order. Add process set: the member ranks.
  std::vector<int64_t> splits;
  // Grouped ops: the group this tensor belongs to ("" for none). A group is
  // enqueued at once and executed (and fused) together.
  std::string group;
  // The submitting rank's TensorSpec::device: -1 host memory, else its
  // CUDA device. Ranks must agree on host or GPU, not on the ordinal.
  int32_t device = -1;
};

struct RequestList {
  bool shutdown = false;
  std::vector<Request> requests;
  // A thread of this rank is blocked waiting for a collective, and the
  // rank has enqueued nothing since it last told (or has joined): the
  // coordinator has every request this rank will send until that wait
  // ends (deadlock_detector.h).
  bool waiting = false;
};

struct Response {
  enum class Kind : uint8_t { kRun = 0, kError = 1 };
  Kind kind = Kind::kRun;
  // The agreed request (as the first rank that submitted it sent it): what
  // every rank runs, and what a rank that has joined runs with zeros.
  Request request;
  // Allgather: dimension 0 of each rank's tensor, by set rank. Alltoall: the
  // split matrix, rows rank s sends to rank r at [s * size + r]. Join: the
  // rank that joined last.
  std::vector<int64_t> sizes;
  // Error: the code every rank's handle fails with, and why.
  common::Code error_code = common::Code::kOk;
  std::string error_message;
};

// Autotune's choice, which rank 0 announces and every rank applies after
// the global set's cycle that brings it.
struct Tuning {
  int64_t fusion_threshold = 0;
  int64_t cycle_time_us = 0;
  bool cache_enabled = true;
  bool hierarchical_allreduce = true;
};

struct ResponseList {
  bool shutdown = false;
  std::vector<Response> responses;
  std::optional<Tuning> tuning;
  // Non-empty: the coordinator's stall inspector stops every rank's
  // collectives, for this reason.
  std::string stop;
};

// The name of a set's `number`th unnamed collective of `type`:
// "<op>.noname.<number>".
std::string UnnamedName(OpType type, int64_t number);
// The number in such a name of a collective of `type`; nullopt for a name
// a user gave.
std::optional<int64_t> UnnamedNumber(OpType type, const std::string& name);

std::string Encode(const RequestList& list);
std::string Encode(const ResponseList& list);
// Malformed bytes are kInternal: only hvd itself writes these messages.
common::Status Decode(const std::string& bytes, RequestList* list);
common::Status Decode(const std::string& bytes, ResponseList* list);

}  // namespace hvd::runtime
