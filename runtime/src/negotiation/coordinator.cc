#include "negotiation/coordinator.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

#include "negotiation/op_info.h"

namespace hvd::runtime {

using common::Code;

namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// Allgather and alltoall shapes only agree after dimension 0: [*, 3, 4].
std::string TrailingDims(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> rest(shape.begin() + 1, shape.end());
  return rest.empty() ? "[*]" : "[*, " + ShapeString(rest).substr(1);
}

Response Error(const Request& first, Code code, std::string message) {
  Response r;
  r.kind = Response::Kind::kError;
  r.request = first;
  r.error_code = code;
  r.error_message = std::move(message);
  return r;
}

using Field = std::function<std::string(const Request&)>;

// If any rank's value of a field differs from the first submitting rank's, a
// message naming that value and every rank that differs.
std::string Disagreement(const std::vector<const Request*>& by_rank,
                         const std::vector<int>& names, const char* what,
                         const Field& field) {
  std::string reference;
  int reference_rank = -1;
  std::string differing;
  for (size_t rank = 0; rank < by_rank.size(); ++rank) {
    if (!by_rank[rank]) continue;
    std::string value = field(*by_rank[rank]);
    if (reference_rank < 0) {
      reference = value;
      reference_rank = names[rank];
    } else if (value != reference) {
      differing += "; rank " + std::to_string(names[rank]) + " has " + value;
    }
  }
  if (differing.empty()) return "";
  return std::string("ranks disagree on ") + what + ": rank " +
         std::to_string(reference_rank) + " has " + reference + differing;
}

std::vector<std::pair<const char*, Field>> FieldsOf(OpType type) {
  std::vector<std::pair<const char*, Field>> fields;
  auto dtype = [](const Request& r) {
    return std::string(DataTypeName(r.dtype));
  };
  auto shape = [](const Request& r) { return ShapeString(r.shape); };
  auto trailing = [](const Request& r) { return TrailingDims(r.shape); };
  auto reduction = [&] {
    fields.emplace_back("the reduce operation", [](const Request& r) {
      return std::string(ReduceOpName(r.op));
    });
    fields.emplace_back("the prescale factor", [](const Request& r) {
      return std::to_string(r.prescale);
    });
    fields.emplace_back("the postscale factor", [](const Request& r) {
      return std::to_string(r.postscale);
    });
  };
  if (OpInfoOf(type).payload) {
    fields.emplace_back("where the tensor lives", [](const Request& r) {
      return std::string(r.device < 0 ? "host memory" : "a CUDA device");
    });
  }
  switch (OpInfoOf(type).agreement) {
    case Agreement::kReduction:
      fields.emplace_back("the data type", dtype);
      reduction();
      fields.emplace_back("the shape", shape);
      break;
    case Agreement::kRows:
      fields.emplace_back("the data type", dtype);
      fields.emplace_back("the shape after dimension 0", trailing);
      break;
    case Agreement::kRoot:
      fields.emplace_back("the data type", dtype);
      fields.emplace_back("the root rank", [](const Request& r) {
        return std::to_string(r.root);
      });
      fields.emplace_back("the shape", shape);
      break;
    case Agreement::kRanks:
      fields.emplace_back(
          "the ranks", [](const Request& r) { return ShapeString(r.splits); });
      break;
    case Agreement::kSetId:
      fields.emplace_back("the process set id", [](const Request& r) {
        return std::to_string(r.root);
      });
      break;
    case Agreement::kNothing:
      break;
  }
  fields.emplace_back("the group", [](const Request& r) {
    return r.group.empty() ? std::string("none") : "'" + r.group + "'";
  });
  return fields;
}

// An allreduce runs with zeros from the joined ranks, a barrier with them
// taking part; Horovod refuses the others then.
bool RunsWithJoinedRanks(OpType type) {
  return OpInfoOf(type).runs_with_joined_ranks;
}

}  // namespace

Coordinator::Coordinator(std::vector<int> global_ranks)
    : global_ranks_(std::move(global_ranks)),
      size_(static_cast<int>(global_ranks_.size())),
      joined_(size_, false),
      waiting_(size_, false) {}

bool Coordinator::Ready(const Entry& entry) const {
  for (int rank = 0; rank < size_; ++rank) {
    if (!entry.seen[rank] && !joined_[rank]) return false;
  }
  return true;
}

void Coordinator::Add(int rank, const RequestList& list, SteadyTime now) {
  shutdown_ = shutdown_ || list.shutdown;
  waiting_[rank] = list.waiting;
  for (const Request& request : list.requests) {
    if (request.type == OpType::kJoin) {
      if (!joined_[rank]) {
        joined_[rank] = true;
        ++joined_count_;
      }
      last_joined_ = rank;
      // Names waiting only for this rank can run now, oldest first.
      std::vector<std::pair<int64_t, std::string>> now_ready;
      for (const auto& [name, entry] : table_) {
        if (!entry.seen[rank] && Ready(entry) &&
            std::find(ready_.begin(), ready_.end(), name) == ready_.end()) {
          now_ready.emplace_back(entry.order, name);
        }
      }
      std::sort(now_ready.begin(), now_ready.end());
      for (auto& [order, name] : now_ready) ready_.push_back(name);
      continue;
    }
    Entry& entry = table_[request.name];
    if (entry.by_rank.empty()) {
      entry.by_rank.resize(size_);
      entry.seen.resize(size_, false);
      entry.order = next_order_++;
      entry.first_seen = now;
    }
    if (entry.seen[rank]) {
      errors_.push_back(Error(request, Code::kInvalidArgument,
                              "rank " + std::to_string(global_ranks_[rank]) +
                                  " submitted '" + request.name +
                                  "' twice before it ran"));
      continue;
    }
    entry.seen[rank] = true;
    entry.by_rank[rank] = request;
    ++entry.count;
    if (Ready(entry)) ready_.push_back(request.name);
  }
}

ResponseList Coordinator::TakeReady() {
  ResponseList out;
  out.shutdown = shutdown_;
  out.stop = stop_;
  out.tuning = tuning_;
  tuning_.reset();
  out.responses = std::move(errors_);
  errors_.clear();
  for (const std::string& name : ready_) {
    auto it = table_.find(name);
    std::vector<const Request*> by_rank(size_, nullptr);
    for (int rank = 0; rank < size_; ++rank) {
      if (it->second.seen[rank]) by_rank[rank] = &it->second.by_rank[rank];
    }
    out.responses.push_back(CheckAgreement(by_rank, global_ranks_));
    table_.erase(it);
  }
  ready_.clear();
  if (joined_count_ == size_) {
    Response join;
    join.request.type = OpType::kJoin;
    join.request.name = "join";
    join.sizes = {global_ranks_[last_joined_]};
    out.responses.push_back(std::move(join));
    std::fill(joined_.begin(), joined_.end(), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return out;
}

std::vector<PendingTensor> Coordinator::Pending() const {
  std::vector<std::pair<int64_t, PendingTensor>> pending;
  for (const auto& [name, entry] : table_) {
    PendingTensor p;
    p.name = name;
    p.first_seen = entry.first_seen;
    for (int rank = 0; rank < size_; ++rank) {
      if (entry.seen[rank]) {
        p.type = entry.by_rank[rank].type;
        p.submitted.push_back(global_ranks_[rank]);
      } else if (!joined_[rank]) {
        p.missing.push_back(global_ranks_[rank]);
      }
    }
    pending.emplace_back(entry.order, std::move(p));
  }
  std::sort(pending.begin(), pending.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PendingTensor> out;
  for (auto& [order, p] : pending) out.push_back(std::move(p));
  return out;
}

std::vector<int> Coordinator::Joined() const {
  std::vector<int> out;
  for (int rank = 0; rank < size_; ++rank) {
    if (joined_[rank]) out.push_back(global_ranks_[rank]);
  }
  return out;
}

void Coordinator::FailPending(Code code, const std::string& message) {
  std::vector<std::pair<int64_t, std::string>> names;
  for (const auto& [name, entry] : table_) {
    // A name all ranks have asked for is answered, not failed.
    if (std::find(ready_.begin(), ready_.end(), name) != ready_.end()) continue;
    names.emplace_back(entry.order, name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& [order, name] : names) {
    auto it = table_.find(name);
    const Entry& entry = it->second;
    const Request* first = nullptr;
    for (int rank = 0; rank < size_ && !first; ++rank) {
      if (entry.seen[rank]) first = &entry.by_rank[rank];
    }
    errors_.push_back(Error(*first, code, message));
    table_.erase(it);
  }
  if (joined_count_ > 0) {
    Request join;
    join.type = OpType::kJoin;
    join.name = "join";
    errors_.push_back(Error(join, code, message));
    std::fill(joined_.begin(), joined_.end(), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
}

Response CheckAgreement(const std::vector<const Request*>& by_rank,
                        const std::vector<int>& global_ranks) {
  std::vector<int> names = global_ranks;
  if (names.empty()) {
    names.resize(by_rank.size());
    std::iota(names.begin(), names.end(), 0);
  }
  const Request* first_ptr = nullptr;
  std::vector<int> joined;
  for (size_t rank = 0; rank < by_rank.size(); ++rank) {
    if (!by_rank[rank]) {
      joined.push_back(names[rank]);
    } else if (!first_ptr) {
      first_ptr = by_rank[rank];
    }
  }
  const Request& first = *first_ptr;
  std::string why = Disagreement(by_rank, names, "the operation", [](auto& r) {
    return std::string(OpTypeName(r.type));
  });
  if (!why.empty()) {
    // Say so under the tensor's name alone: the operation is what differs.
    return Error(first, Code::kMismatch, "'" + first.name + "': " + why);
  }
  const std::string what =
      std::string(OpTypeName(first.type)) + " '" + first.name + "'";
  if (!joined.empty() && !RunsWithJoinedRanks(first.type)) {
    std::string ranks;
    for (int rank : joined)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    // A mismatch (a RuntimeError in Python, as Horovod raises here): the
    // ranks disagree on whether to run it.
    return Error(first, Code::kMismatch,
                 what + " cannot run while rank(s) " + ranks +
                     " have joined (hvd.join): only allreduce and barrier "
                     "run with joined ranks; call it before joining, or "
                     "join on every rank first" +
                     (first.type == OpType::kAllgather
                          ? " (DistributedOptimizer allgathers sparse "
                            "gradients: sparse_as_dense=True allreduces "
                            "them instead)"
                          : ""));
  }
  for (const auto& [field_name, field] : FieldsOf(first.type)) {
    why = Disagreement(by_rank, names, field_name, field);
    if (!why.empty()) return Error(first, Code::kMismatch, what + ": " + why);
  }
  if (!joined.empty() && first.device >= 0) {
    // A joined rank has no tensor on a device to stand in with.
    return Error(first, Code::kMismatch,
                 what +
                     " of CUDA tensors cannot run while ranks have joined "
                     "(hvd.join): join after the last GPU collective, or "
                     "on every rank at once");
  }
  Response ok;
  ok.request = first;
  if (first.type == OpType::kAllgather) {
    for (const Request* r : by_rank) ok.sizes.push_back(r->shape[0]);
  } else if (first.type == OpType::kAlltoall) {
    for (const Request* r : by_rank) {
      ok.sizes.insert(ok.sizes.end(), r->splits.begin(), r->splits.end());
    }
  }
  return ok;
}

Response CheckAgreement(const std::vector<Request>& by_rank) {
  std::vector<const Request*> pointers;
  for (const Request& r : by_rank) pointers.push_back(&r);
  return CheckAgreement(pointers);
}

}  // namespace hvd::runtime
