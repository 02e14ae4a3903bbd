#include "engine/fusion_plan.h"

#include "ops/op_table.h"

namespace hvd::runtime {

namespace {

bool Fusable(const Response& r) {
  return r.kind == Response::Kind::kRun &&
         OpExecutorsOf(r.request.type).fused != nullptr;
}

bool Compatible(const Response& a, const Response& b) {
  const Request& x = a.request;
  const Request& y = b.request;
  // Host and device buffers never fuse (the ranks agree which each is).
  return Fusable(a) && Fusable(b) && x.type == y.type && x.dtype == y.dtype &&
         x.op == y.op && x.prescale == y.prescale &&
         x.postscale == y.postscale && (x.device < 0) == (y.device < 0);
}

}  // namespace

size_t FusionBytes(const Response& response) {
  const Request& r = response.request;
  const size_t element = DataTypeSize(r.dtype);
  if (r.type != OpType::kAllgather) return ElementCount(r.shape) * element;
  std::vector<int64_t> row(r.shape.begin() + 1, r.shape.end());
  size_t rows = 0;
  for (int64_t n : response.sizes) rows += static_cast<size_t>(n);
  return rows * ElementCount(row) * element;
}

std::vector<std::vector<size_t>> PlanFusion(
    const std::vector<Response>& responses, const FusionOptions& options) {
  const size_t n = responses.size();
  std::vector<bool> assigned(n, false);
  // The unassigned members of `first`'s group that fuse with it.
  auto group_of = [&](size_t first) {
    std::vector<size_t> members;
    for (size_t k = first; k < n; ++k) {
      if (!assigned[k] &&
          responses[k].request.group == responses[first].request.group &&
          Compatible(responses[first], responses[k])) {
        members.push_back(k);
      }
    }
    return members;
  };
  std::vector<std::vector<size_t>> units;
  for (size_t i = 0; i < n; ++i) {
    if (assigned[i]) continue;
    const Response& head = responses[i];
    if (!Fusable(head)) {
      assigned[i] = true;
      units.push_back({i});
      continue;
    }
    const bool grouped = !head.request.group.empty();
    std::vector<size_t> unit = grouped ? group_of(i) : std::vector<size_t>{i};
    size_t bytes = 0;
    for (size_t k : unit) {
      assigned[k] = true;
      bytes += FusionBytes(responses[k]);
    }
    if (!grouped || options.group_fusion) {
      for (size_t j = i + 1; j < n; ++j) {
        if (assigned[j] || !Compatible(head, responses[j])) continue;
        std::vector<size_t> more{j};
        if (!responses[j].request.group.empty()) {
          if (!options.group_fusion) continue;
          more = group_of(j);
        }
        size_t more_bytes = 0;
        for (size_t k : more) more_bytes += FusionBytes(responses[k]);
        if (bytes + more_bytes > options.threshold) continue;
        bytes += more_bytes;
        for (size_t k : more) {
          assigned[k] = true;
          unit.push_back(k);
        }
      }
    }
    std::sort(unit.begin(), unit.end());
    units.push_back(std::move(unit));
  }
  return units;
}

}  // namespace hvd::runtime
