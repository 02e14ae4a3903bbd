// One rank of a job that runtime_threads_test starts: drives a Runtime from
// two framework threads at once (allreduce, allgather, broadcast, grouped
// allreduce, barrier), with a timeline on rank 0, then shuts it down and
// starts the next generation in the same process, as an elastic reset
// does, and runs again. Checks every result. Under ThreadSanitizer this is
// what exercises the background thread, the handle table, the timeline
// writer and Gloo together.
// Usage: collectives_worker PORT RANK SIZE TIMELINE; the job secret in
// HVD_SECRET_KEY, from which it takes the key hvdrun would give it. Exit 0
// when every result is right; 1 and the reason on stderr otherwise.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvd/runtime/runtime.h"
#include "runtime/worker_key_for_tests.h"

namespace {

using hvd::common::Status;
using hvd::runtime::DataType;
using hvd::runtime::ReduceOp;
using hvd::runtime::Runtime;
using hvd::runtime::TensorSpec;

constexpr int kOpsPerThread = 8;

// The first failure of any thread; a thread that finds one stops.
class Failures {
 public:
  void Add(const std::string& what) {
    std::fprintf(stderr, "rank %d: %s\n", rank_, what.c_str());
    failed_ = true;
  }
  bool any() const { return failed_; }
  void set_rank(int rank) { rank_ = rank; }

 private:
  int rank_ = -1;
  std::atomic<bool> failed_{false};
};

Failures failures;

bool Check(bool ok, const std::string& what) {
  if (!ok) failures.Add(what);
  return ok;
}

bool CheckStatus(const Status& status, const std::string& what) {
  return Check(status.ok(), what + ": " + status.ToString());
}

// One framework thread's collectives; names are unique per thread, so the
// two threads' tensors interleave freely in negotiation.
void RunOps(Runtime& runtime, int thread, int rank, int size) {
  const std::string prefix = "t" + std::to_string(thread) + ".";
  for (int i = 0; i < kOpsPerThread && !failures.any(); ++i) {
    const std::string n = std::to_string(i);
    // Allreduce: sum of (rank + 1 + i) over ranks.
    std::vector<float> sum(16, static_cast<float>(rank + 1 + i));
    TensorSpec spec{prefix + "ar" + n, DataType::kFloat32, {16}};
    hvd::runtime::AllreduceArgs args;
    args.op = ReduceOp::kSum;
    auto ar = runtime.Allreduce(spec, sum.data(), sum.data(), args);
    // Allgather: rank r sends r + 1 rows holding r.
    std::vector<int32_t> rows(rank + 1, rank);
    auto ag = runtime.Allgather(
        TensorSpec{prefix + "ag" + n, DataType::kInt32, {rank + 1}},
        rows.data());
    // Broadcast from a root that changes with i.
    const int root = i % size;
    std::vector<double> cast(4, rank);
    auto bc = runtime.Broadcast(
        TensorSpec{prefix + "bc" + n, DataType::kFloat64, {4}}, cast.data(),
        root);
    if (!CheckStatus(ar.status(), "allreduce enqueue") ||
        !CheckStatus(ag.status(), "allgather enqueue") ||
        !CheckStatus(bc.status(), "broadcast enqueue")) {
      return;
    }
    auto ar_done = runtime.Wait(*ar);
    auto ag_done = runtime.Wait(*ag);
    auto bc_done = runtime.Wait(*bc);
    if (!CheckStatus(ar_done.ok() ? ar_done->status : ar_done.status(),
                     spec.name) ||
        !CheckStatus(ag_done.ok() ? ag_done->status : ag_done.status(),
                     prefix + "ag" + n) ||
        !CheckStatus(bc_done.ok() ? bc_done->status : bc_done.status(),
                     prefix + "bc" + n)) {
      return;
    }
    const float want_sum = size * (size + 1) / 2.0f + size * i;
    Check(std::all_of(sum.begin(), sum.end(),
                      [&](float v) { return v == want_sum; }),
          spec.name + ": wrong sum");
    int64_t total_rows = 0;
    for (int r = 0; r < size; ++r) total_rows += r + 1;
    Check(ag_done->shape == std::vector<int64_t>{total_rows},
          prefix + "ag" + n + ": wrong shape");
    std::vector<int32_t> want_rows;
    for (int r = 0; r < size; ++r) want_rows.insert(want_rows.end(), r + 1, r);
    const auto* gathered =
        reinterpret_cast<const int32_t*>(ag_done->data->data());
    Check(ag_done->data->size() == want_rows.size() * sizeof(int32_t) &&
              std::equal(want_rows.begin(), want_rows.end(), gathered),
          prefix + "ag" + n + ": wrong rows");
    Check(std::all_of(cast.begin(), cast.end(),
                      [&](double v) { return v == root; }),
          prefix + "bc" + n + ": wrong value");
  }
  // A grouped allreduce of two tensors.
  std::vector<float> a(8, 1.0f), b(3, 2.0f);
  hvd::runtime::AllreduceArgs average;  // kAverage
  auto grouped = runtime.GroupedAllreduce(
      {TensorSpec{prefix + "ga", DataType::kFloat32, {8}},
       TensorSpec{prefix + "gb", DataType::kFloat32, {3}}},
      {a.data(), b.data()}, {a.data(), b.data()}, average);
  if (!CheckStatus(grouped.status(), "grouped allreduce enqueue")) return;
  for (auto handle : *grouped) {
    auto done = runtime.Wait(handle);
    CheckStatus(done.ok() ? done->status : done.status(), "grouped allreduce");
  }
  Check(std::all_of(a.begin(), a.end(), [](float v) { return v == 1.0f; }) &&
            std::all_of(b.begin(), b.end(), [](float v) { return v == 2.0f; }),
        prefix + "ga/gb: wrong average");
}

// One generation: a Runtime driven by two threads, then a barrier.
void RunGeneration(const hvd::runtime::RuntimeConfig& config,
                   int64_t generation, const std::string& timeline) {
  auto runtime = Runtime::Start(config, generation);
  if (!CheckStatus(runtime.status(),
                   "start of generation " + std::to_string(generation))) {
    return;
  }
  if (config.layout.rank == 0 && !timeline.empty()) {
    CheckStatus((*runtime)->StartTimeline(timeline, true), "timeline");
  }
  std::thread other(
      [&] { RunOps(**runtime, 1, config.layout.rank, config.layout.size); });
  RunOps(**runtime, 0, config.layout.rank, config.layout.size);
  other.join();
  if (failures.any()) return;
  auto barrier = (*runtime)->Barrier();
  if (CheckStatus(barrier.status(), "barrier enqueue")) {
    auto done = (*runtime)->Wait(*barrier);
    CheckStatus(done.ok() ? done->status : done.status(), "barrier");
  }
  (*runtime)->StopTimeline();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s PORT RANK SIZE TIMELINE\n", argv[0]);
    return 2;
  }
  const char* secret = std::getenv("HVD_SECRET_KEY");
  hvd::runtime::RuntimeConfig config;
  config.rendezvous_addr = "127.0.0.1";
  config.rendezvous_port = std::atoi(argv[1]);
  config.layout.rank = std::atoi(argv[2]);
  config.layout.size = std::atoi(argv[3]);
  config.layout.local_rank = config.layout.rank;
  config.layout.local_size = config.layout.size;
  config.hostname = "127.0.0.1";
  hvd::testing::GiveWorkerKey(config, secret ? secret : "",
                              config.layout.rank + 1);
  failures.set_rank(config.layout.rank);
  RunGeneration(config, 1, argv[4]);
  if (!failures.any()) RunGeneration(config, 2, "");
  return failures.any() ? 1 : 0;
}
