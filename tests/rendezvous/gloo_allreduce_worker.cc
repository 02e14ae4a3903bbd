// One rank of the HttpStore and EtcdStore integration tests: connects a
// Gloo context through the rendezvous server (or etcd), allreduces, and
// checks the sum itself.
// Usage: gloo_allreduce_worker <port> <rank> <size> <prefix> [etcd]
// <port> is the rendezvous server's, or with "etcd" an etcd member's on
// 127.0.0.1. The job secret comes from HVD_SECRET_KEY, as for real workers.
// Exit code 0 only when the allreduce result is exactly right.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "hvd/common/env.h"
#include "hvd/common/env_vars.h"
#include "hvd/rendezvous/etcd_store.h"
#include "hvd/rendezvous/http_store.h"

int main(int argc, char** argv) {
  const bool etcd = argc == 6 && std::string(argv[5]) == "etcd";
  if (argc != 5 && !etcd) {
    std::fprintf(stderr, "usage: %s <port> <rank> <size> <prefix> [etcd]\n",
                 argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int rank = std::atoi(argv[2]);
  const int size = std::atoi(argv[3]);
  const std::string prefix = argv[4];
  try {
    const std::string secret =
        hvd::common::GetEnvString(hvd::common::env_vars::kHvdSecretKey, "");
    std::unique_ptr<gloo::rendezvous::Store> store;
    uint64_t (*requests)(gloo::rendezvous::Store&) = nullptr;
    if (etcd) {
      hvd::rendezvous::EtcdOptions options;
      hvd::rendezvous::EtcdEndpoint endpoint;
      endpoint.host = "127.0.0.1";
      endpoint.port = port;
      options.endpoints = {endpoint};
      store = std::make_unique<hvd::rendezvous::EtcdStore>(
          options, secret, prefix, std::chrono::seconds(30));
      requests = [](gloo::rendezvous::Store& s) {
        return static_cast<hvd::rendezvous::EtcdStore&>(s).requests();
      };
    } else {
      hvd::common::HttpClientOptions options;
      options.host = "127.0.0.1";
      options.port = port;
      options.secret = secret;
      auto http = std::make_unique<hvd::rendezvous::HttpStore>(
          options, "gloo", prefix, std::chrono::seconds(30));
      http->PrefetchFullMesh(rank, size);
      store = std::move(http);
      requests = [](gloo::rendezvous::Store& s) {
        return static_cast<hvd::rendezvous::HttpStore&>(s).requests();
      };
    }

    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(30));
    context->connectFullMesh(*store, device);

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
                static_cast<unsigned long long>(requests(*store)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}
