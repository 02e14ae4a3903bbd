// One rank of the HttpStore integration test: connects a Gloo context
// through the rendezvous server, allreduces, and checks the sum itself.
// Usage: gloo_allreduce_worker <port> <rank> <size> <prefix>
// The job secret comes from HVD_SECRET_KEY, as for real workers.
// Exit code 0 only when the allreduce result is exactly right.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/rendezvous/http_store.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <port> <rank> <size> <prefix>\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int rank = std::atoi(argv[2]);
  const int size = std::atoi(argv[3]);
  const std::string prefix = argv[4];
  try {
    hvd::common::HttpClientOptions options;
    options.host = "127.0.0.1";
    options.port = port;
    options.secret =
        hvd::common::GetEnvString(hvd::common::env_vars::kHvdSecretKey, "");
    hvd::rendezvous::HttpStore store(options, "gloo", prefix,
                                     std::chrono::seconds(30));
    store.PrefetchFullMesh(rank, size);

    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(30));
    context->connectFullMesh(store, device);

    constexpr size_t kCount = 4096;
    std::vector<float> data(kCount);
    for (size_t i = 0; i < kCount; ++i) data[i] = float(rank + 1) * float(i);
    gloo::AllreduceOptions allreduce(context);
    allreduce.setOutput(data.data(), data.size());
    allreduce.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(
            &gloo::sum<float>));
    gloo::allreduce(allreduce);

    const float ranks_sum = float(size * (size + 1) / 2);
    for (size_t i = 0; i < kCount; ++i) {
      if (data[i] != ranks_sum * float(i)) {
        std::fprintf(stderr, "rank %d: element %zu is %f, expected %f\n", rank,
                     i, data[i], ranks_sum * float(i));
        return 1;
      }
    }
    std::printf("rank %d ok, %llu store requests\n", rank,
                static_cast<unsigned long long>(store.requests()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}
