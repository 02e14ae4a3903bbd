// What ranks run as threads do, cycle by cycle, in the controller and
// negotiator tests (on the in-process control plane), and one-line views of
// their answers for comparing ranks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "in_process_control_plane.h"
#include "negotiation/message.h"

namespace hvd::runtime {

using Clock = std::chrono::steady_clock;

Request Allreduce(const std::string& name, std::vector<int64_t> shape = {4},
                  DataType dtype = DataType::kFloat32);
std::vector<int> Ranks(int size);  // 0, 1, ..., size - 1

// What a rank does in one cycle: exchange `list`, stop answering (its
// thread returns), or die.
struct Step {
  RequestList list;
  bool stop = false;
  bool die = false;
};
Step Send(std::vector<Request> requests, bool shutdown = false);
Step StopAnswering();
Step Die();

// One rank's cycles: each answer, until the first error; how long its
// last cycle took.
struct CycleLog {
  std::vector<common::Result<ResponseList>> answers;
  Clock::duration last_cycle{0};
};

// Plays `steps` as `rank`: each exchange through `cycle` until an answer is
// an error; a stop ends the rank's part, a die kills it on `hub`.
using CycleFn =
    std::function<common::Result<ResponseList>(const RequestList& list)>;
void Play(InProcessHub& hub, int rank, const std::vector<Step>& steps,
          const CycleFn& cycle, CycleLog* log);

// "a:run;b:err(timeout);g:run,2,5;": names, outcomes and sizes in order.
std::string Summary(const ResponseList& list);

// Every rank's answers, which must be ok; "" where one is not.
template <typename Log>
std::vector<std::vector<std::string>> Summaries(const std::vector<Log>& logs) {
  std::vector<std::vector<std::string>> out;
  for (const CycleLog& log : logs) {
    out.emplace_back();
    for (const auto& answer : log.answers) {
      EXPECT_TRUE(answer.ok()) << answer.status().ToString();
      out.back().push_back(answer.ok() ? Summary(*answer) : "");
    }
  }
  return out;
}

}  // namespace hvd::runtime
