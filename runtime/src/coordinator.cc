#include "coordinator.h"

#include <functional>
#include <sstream>

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

// Allgather shapes only agree after dimension 0: [*, 3, 4].
std::string TrailingDims(const std::vector<int64_t>& shape) {
  std::vector<int64_t> rest(shape.begin() + 1, shape.end());
  return rest.empty() ? "[*]" : "[*, " + ShapeString(rest).substr(1);
}

Response Error(const Request& first, Code code, std::string message) {
  Response r;
  r.kind = Response::Kind::kError;
  r.type = first.type;
  r.name = first.name;
  r.error_code = code;
  r.error_message = std::move(message);
  return r;
}

// If any rank's value of a field differs from rank 0's, a message naming
// rank 0's value and every rank that differs.
std::string Disagreement(
    const std::vector<Request>& by_rank, const char* what,
    const std::function<std::string(const Request&)>& field) {
  const std::string reference = field(by_rank[0]);
  std::string differing;
  for (size_t rank = 1; rank < by_rank.size(); ++rank) {
    std::string value = field(by_rank[rank]);
    if (value != reference) {
      differing += "; rank " + std::to_string(rank) + " has " + value;
    }
  }
  if (differing.empty()) return "";
  return std::string("ranks disagree on ") + what + ": rank 0 has " +
         reference + differing;
}

}  // namespace

Coordinator::Coordinator(int size) : size_(size) {}

void Coordinator::Add(int rank, const RequestList& list) {
  shutdown_ = shutdown_ || list.shutdown;
  for (const Request& request : list.requests) {
    Entry& entry = table_[request.name];
    if (entry.by_rank.empty()) {
      entry.by_rank.resize(size_);
      entry.seen.resize(size_, false);
    }
    if (entry.seen[rank]) {
      errors_.push_back(Error(request, Code::kInvalidArgument,
                              "rank " + std::to_string(rank) + " submitted '" +
                                  request.name + "' twice before it ran"));
      continue;
    }
    entry.seen[rank] = true;
    entry.by_rank[rank] = request;
    if (++entry.count == size_) ready_.push_back(request.name);
  }
}

ResponseList Coordinator::TakeReady() {
  ResponseList out;
  out.shutdown = shutdown_;
  out.responses = std::move(errors_);
  errors_.clear();
  for (const std::string& name : ready_) {
    auto it = table_.find(name);
    out.responses.push_back(CheckAgreement(it->second.by_rank));
    table_.erase(it);
  }
  ready_.clear();
  return out;
}

Response CheckAgreement(const std::vector<Request>& by_rank) {
  const Request& first = by_rank[0];
  auto fail = [&](const std::string& why) {
    return Error(
        first, Code::kMismatch,
        std::string(OpTypeName(first.type)) + " '" + first.name + "': " + why);
  };
  std::string why = Disagreement(
      by_rank, "the operation",
      [](const Request& r) { return std::string(OpTypeName(r.type)); });
  if (!why.empty()) {
    // Say so under the tensor's name alone: the operation is what differs.
    return Error(first, Code::kMismatch, "'" + first.name + "': " + why);
  }
  std::vector<
      std::pair<const char*, std::function<std::string(const Request&)>>>
      fields;
  if (first.type != OpType::kBarrier) {
    fields.emplace_back("the data type", [](const Request& r) {
      return std::string(DataTypeName(r.dtype));
    });
  }
  switch (first.type) {
    case OpType::kAllreduce:
      fields.emplace_back("the reduce operation", [](const Request& r) {
        return std::string(ReduceOpName(r.op));
      });
      fields.emplace_back("the prescale factor", [](const Request& r) {
        return std::to_string(r.prescale);
      });
      fields.emplace_back("the postscale factor", [](const Request& r) {
        return std::to_string(r.postscale);
      });
      fields.emplace_back(
          "the shape", [](const Request& r) { return ShapeString(r.shape); });
      break;
    case OpType::kAllgather:
      fields.emplace_back("the shape after dimension 0", [](const Request& r) {
        return TrailingDims(r.shape);
      });
      break;
    case OpType::kBroadcast:
      fields.emplace_back("the root rank", [](const Request& r) {
        return std::to_string(r.root);
      });
      fields.emplace_back(
          "the shape", [](const Request& r) { return ShapeString(r.shape); });
      break;
    case OpType::kBarrier:
      break;
  }
  for (const auto& [what, field] : fields) {
    why = Disagreement(by_rank, what, field);
    if (!why.empty()) return fail(why);
  }
  Response ok;
  ok.type = first.type;
  ok.name = first.name;
  if (first.type == OpType::kAllgather) {
    for (const Request& r : by_rank) ok.first_dims.push_back(r.shape[0]);
  }
  return ok;
}

}  // namespace hvd::runtime
