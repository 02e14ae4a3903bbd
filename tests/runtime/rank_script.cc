#include "rank_script.h"

namespace hvd::runtime {

Request Allreduce(const std::string& name, std::vector<int64_t> shape,
                  DataType dtype) {
  Request r;
  r.type = OpType::kAllreduce;
  r.dtype = dtype;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

std::vector<int> Ranks(int size) {
  std::vector<int> ranks;
  for (int rank = 0; rank < size; ++rank) ranks.push_back(rank);
  return ranks;
}

Step Send(std::vector<Request> requests, bool shutdown) {
  Step step;
  step.list.requests = std::move(requests);
  step.list.shutdown = shutdown;
  return step;
}

Step StopAnswering() {
  Step step;
  step.stop = true;
  return step;
}

Step Die() {
  Step step;
  step.die = true;
  return step;
}

void Play(InProcessHub& hub, int rank, const std::vector<Step>& steps,
          const CycleFn& cycle, CycleLog* log) {
  for (const Step& step : steps) {
    if (step.stop) return;
    if (step.die) {
      hub.Kill(rank, "killed by the test");
      return;
    }
    const auto start = Clock::now();
    log->answers.push_back(cycle(step.list));
    log->last_cycle = Clock::now() - start;
    if (!log->answers.back().ok()) return;
  }
}

std::string Summary(const ResponseList& list) {
  std::string out = list.shutdown ? "shutdown;" : "";
  for (const Response& r : list.responses) {
    out += r.request.name + (r.kind == Response::Kind::kRun ? ":run" : ":err");
    if (r.kind == Response::Kind::kError) {
      out += "(" + std::string(common::CodeName(r.error_code)) + ")";
    }
    for (int64_t s : r.sizes) out += "," + std::to_string(s);
    out += ";";
  }
  return out;
}

}  // namespace hvd::runtime
