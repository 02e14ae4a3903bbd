// Raw Gloo side of the allreduce benchmark (scripts/bench/allreduce/run.sh):
// the floor that hvd and torch.distributed, both built on the same libgloo,
// are measured against. One worker per rank, started by hvdrun:
//
//   hvdrun -np N hvd_gloo_allreduce_bench [--sizes B,B,...]
//       [--min-seconds S] [--warmup W] [--steps K]
//
// Float32 sum, Gloo's ring allreduce through the gloo::allreduce options
// API, in place. The method is the one torch_allreduce_bench.py and
// hvd_allreduce_bench.py share through bench_method.py; keep them in step.
// Rank 0 prints one JSON line per size. With --steps K it times K single
// ops instead and prints their median, the step-time form of
// scripts/bench/fusion (one flat buffer per training step).
#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/network_interfaces.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/http_store.h"
#include "hvd/rendezvous/protocol.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace {

namespace ev = hvd::common::env_vars;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr char kUsage[] =
    "usage: hvd_gloo_allreduce_bench [--sizes B,B,...] [--min-seconds S] "
    "[--warmup W] [--steps K]";
// Iterations beyond this add nothing at the smallest sizes but time.
constexpr int kMaxIters = 200000;
constexpr int kMinIters = 5;
// Data and calibration ops carry different tags so that a message of one
// can never be matched by the other.
constexpr uint32_t kDataTag = 0;
constexpr uint32_t kSyncTag = 1;

struct Options {
  std::vector<size_t> sizes = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20,
                               4 << 20, 16 << 20, 64 << 20, 256 << 20};
  double min_seconds = 0.5;
  int warmup = 3;
  // > 0: time this many single ops per size and report their median.
  int steps = 0;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "hvd_gloo_allreduce_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Ok(hvd::common::Result<T> result) {
  if (!result.ok()) Die(result.status().ToString());
  return *result;
}

Options ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::puts(kUsage);
      std::exit(0);
    }
    if (i + 1 == argc) {
      Die(std::string(kUsage) + "\n" + flag + " needs a value");
    }
    std::string value = argv[++i];
    if (flag == "--sizes") {
      options.sizes.clear();
      size_t start = 0;
      while (start <= value.size()) {
        size_t end = std::min(value.find(',', start), value.size());
        int64_t bytes =
            Ok(hvd::common::ParseInt(value.substr(start, end - start),
                                     "--sizes", sizeof(float), INT64_MAX));
        if (bytes % sizeof(float) != 0) {
          Die("--sizes: " + std::to_string(bytes) +
              " is not a whole number of float32 elements");
        }
        options.sizes.push_back(static_cast<size_t>(bytes));
        start = end + 1;
      }
    } else if (flag == "--min-seconds") {
      options.min_seconds =
          Ok(hvd::common::ParseSeconds(value, "--min-seconds")).count() / 1e3;
    } else if (flag == "--warmup") {
      options.warmup = static_cast<int>(
          Ok(hvd::common::ParseInt(value, "--warmup", 1, 1000)));
    } else if (flag == "--steps") {
      options.steps = static_cast<int>(
          Ok(hvd::common::ParseInt(value, "--steps", 1, kMaxIters)));
    } else {
      Die(std::string(kUsage) + "\nunknown flag " + flag);
    }
  }
  return options;
}

// The worker's place in the job and the way to the driver, as hvdrun sets
// them; the same variables the runtime reads in RuntimeConfig::FromEnv.
struct Job {
  int rank = 0;
  int size = 1;
  std::string hostname;
  hvd::common::HttpClientOptions store;
  std::chrono::milliseconds start_timeout{30s};
};

Job JobFromEnv() {
  if (!hvd::common::GetEnv(ev::kRank)) {
    Die("not started by hvdrun (no HOROVOD_RANK); run: hvdrun -np N "
        "hvd_gloo_allreduce_bench");
  }
  Job job;
  job.rank = static_cast<int>(Ok(hvd::common::GetEnvInt(ev::kRank, 0, 0)));
  job.size = static_cast<int>(Ok(hvd::common::GetEnvInt(ev::kSize, 1, 1)));
  job.hostname = hvd::common::GetEnvString(ev::kHostname, "127.0.0.1");
  // Signed as the worker hvdrun started: its id, slot and own key.
  job.store.worker = hvd::common::WorkerIdentity{
      Ok(hvd::common::GetEnvInt(ev::kHvdWorkerId, 0, 1)),
      hvd::rendezvous::SlotName(
          job.hostname,
          static_cast<int>(Ok(hvd::common::GetEnvInt(ev::kLocalRank, 0, 0))))};
  job.store.secret = hvd::common::GetEnvString(ev::kHvdWorkerKey, "");
  // As hvd's workers: the address of the first interface of
  // HOROVOD_GLOO_IFACE this host has (the test bed's hosts resolve their
  // own names to 127.0.1.1, which peers cannot reach).
  const std::string iface = hvd::common::GetEnvString(ev::kGlooIface, "");
  if (!iface.empty()) {
    auto found = hvd::common::FirstListedInterface(
        hvd::common::SplitInterfaceList(iface), hvd::common::LocalInterfaces());
    if (!found) Die("no interface of " + iface + " on this host");
    job.hostname = found->address;
  }
  job.store.host = hvd::common::GetEnvString(ev::kGlooRendezvousAddr, "");
  job.store.port = static_cast<int>(
      Ok(hvd::common::GetEnvInt(ev::kGlooRendezvousPort, 0, 1, 65535)));
  job.start_timeout =
      Ok(hvd::common::GetEnvSeconds(ev::kStartTimeout, job.start_timeout));
  return job;
}

std::shared_ptr<gloo::Context> Connect(const Job& job) {
  gloo::transport::tcp::attr attr;
  attr.hostname = job.hostname;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context =
      std::make_shared<gloo::rendezvous::Context>(job.rank, job.size);
  // A 256 MiB op on 4 oversubscribed ranks takes about a second, but a
  // descheduled peer can stall one for much longer on a busy machine; a
  // hung peer still ends the run instead of blocking it forever.
  context->setTimeout(120s);
  // Its own prefix, so that it can never meet the keys of an hvd runtime,
  // in generation 0 of the Gloo scope, where a static job's workers write.
  hvd::rendezvous::HttpStore store(
      job.store, hvd::rendezvous::protocol::kGlooScope,
      hvd::rendezvous::protocol::GlooGenerationPrefix(0) + "bench/allreduce/",
      job.start_timeout);
  store.PrefetchFullMesh(job.rank, job.size);
  context->connectFullMesh(store, device);
  return context;
}

void Allreduce(const std::shared_ptr<gloo::Context>& context, float* data,
               size_t elements, uint32_t tag) {
  // A fresh options object per op, as torch.distributed and hvd build one
  // per op: the baseline pays the same per-call setup.
  gloo::AllreduceOptions opts(context);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(data, elements);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(
          &gloo::sum<float>));
  opts.setTag(tag);
  gloo::allreduce(opts);
}

// Every rank's value summed: the same result on every rank, which is how the
// ranks agree on an iteration count without a separate broadcast.
float SumOverRanks(const std::shared_ptr<gloo::Context>& context, float value) {
  Allreduce(context, &value, 1, kSyncTag);
  return value;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// --steps: each op timed alone, as a training step is; rank 0 prints the
// median, mean, min and max in scripts/bench/fusion's JSON form.
void TimeSteps(const std::shared_ptr<gloo::Context>& context,
               const Options& options, std::vector<float>& data) {
  SumOverRanks(context, 0.0f);  // lines the ranks up before the first step
  std::vector<double> times;
  for (int i = 0; i < options.steps; ++i) {
    auto start = Clock::now();
    Allreduce(context, data.data(), data.size(), kDataTag);
    times.push_back(Seconds(Clock::now() - start));
  }
  if (context->rank != 0) return;
  double mean = 0;
  for (double t : times) mean += t / times.size();
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  std::printf(
      "{\"impl\": \"gloo\", \"np\": %d, \"tensors\": 1, \"bytes\": %zu, "
      "\"steps\": %zu, \"median_s\": %.9g, \"mean_s\": %.9g, "
      "\"min_s\": %.9g, \"max_s\": %.9g}\n",
      context->size, data.size() * sizeof(float), n, median, mean,
      times.front(), times.back());
  std::fflush(stdout);
}

void BenchSize(const std::shared_ptr<gloo::Context>& context,
               const Options& options, size_t bytes) {
  const int rank = context->rank;
  const int size = context->size;
  const size_t elements = bytes / sizeof(float);
  std::vector<float> data(elements, static_cast<float>(rank + 1));

  // The first op doubles as a check that the sum is right.
  Allreduce(context, data.data(), elements, kDataTag);
  const float expected = size * (size + 1) / 2.0f;
  if (data.front() != expected || data.back() != expected) {
    Die("wrong sum at " + std::to_string(bytes) +
        " bytes: " + std::to_string(data.front()) + ", expected " +
        std::to_string(expected));
  }
  // Zeros from here on: repeated sums would otherwise grow to infinity.
  std::fill(data.begin(), data.end(), 0.0f);

  for (int i = 0; i < options.warmup; ++i) {
    Allreduce(context, data.data(), elements, kDataTag);
  }
  if (options.steps > 0) {
    TimeSteps(context, options, data);
    return;
  }
  // A few warm-up ops misjudge a small size's op time by 2x or more, so
  // batches double until the ranks' mean batch time is a tenth of the
  // target. The mean is the same on every rank, so all stop together, and
  // its allreduce lines the ranks up before the clock starts.
  int batch = 1;
  double batch_seconds = 0;
  while (true) {
    auto start = Clock::now();
    for (int i = 0; i < batch; ++i) {
      Allreduce(context, data.data(), elements, kDataTag);
    }
    batch_seconds = SumOverRanks(context, Seconds(Clock::now() - start)) / size;
    if (batch_seconds >= options.min_seconds / 10 || batch >= kMaxIters) break;
    batch *= 2;
  }
  const int iters = static_cast<int>(std::clamp(
      std::ceil(options.min_seconds * batch / batch_seconds),
      static_cast<double>(kMinIters), static_cast<double>(kMaxIters)));

  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    Allreduce(context, data.data(), elements, kDataTag);
  }
  double seconds = Seconds(Clock::now() - start) / iters;

  if (rank == 0) {
    double algbw = bytes / seconds / 1e9;
    std::printf(
        "{\"impl\": \"gloo\", \"np\": %d, \"bytes\": %zu, \"iters\": %d, "
        "\"seconds\": %.9g, \"latency_us\": %.3f, \"algbw_gbs\": %.6g, "
        "\"busbw_gbs\": %.6g}\n",
        size, bytes, iters, seconds, seconds * 1e6, algbw,
        algbw * 2 * (size - 1) / size);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options = ParseArgs(argc, argv);
  Job job = JobFromEnv();
  try {
    auto context = Connect(job);
    for (size_t bytes : options.sizes) BenchSize(context, options, bytes);
  } catch (const std::exception& e) {  // gloo::Exception and EnforceNotMet
    Die(std::string("rank ") + std::to_string(job.rank) + ": " + e.what());
  }
  return 0;
}
