// A worker started by hvdrun: reads its config, connects the global, local
// and cross Gloo contexts, and allreduces its rank on each. Prints
// "global=<sum> local=<sum> cross=<sum>"; exits 1 with the Status on error.
#include <gloo/allreduce.h>
#include <gloo/math.h>

#include <cstdio>

#include "hvd/runtime/config.h"
#include "transport/gloo_contexts.h"

namespace {

int SumOfRanks(const std::shared_ptr<gloo::Context>& context, int rank) {
  int value = rank;
  gloo::AllreduceOptions options(context);
  options.setOutput(&value, 1);
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(
          &gloo::sum<int>));
  gloo::allreduce(options);
  return value;
}

}  // namespace

int main() {
  auto config = hvd::runtime::RuntimeConfig::FromEnv();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  auto contexts = hvd::runtime::ConnectGlooContexts(
      *config, 1, hvd::runtime::ContextSet::kAll);
  if (!contexts.ok()) {
    std::fprintf(stderr, "%s\n", contexts.status().ToString().c_str());
    return 1;
  }
  std::printf("global=%d local=%d cross=%d sizes=%d/%d/%d\n",
              SumOfRanks(contexts->global, config->layout.rank),
              SumOfRanks(contexts->local, config->layout.rank),
              SumOfRanks(contexts->cross, config->layout.rank),
              contexts->global->size, contexts->local->size,
              contexts->cross->size);
  return 0;
}
