// Fuzzes the parser of a host discovery script's output
// (launcher/src/driver/discovery.cc). Output it accepts must describe a valid host
// list, and printing that list as "host:slots" lines must parse to the same
// list.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "driver/discovery.h"
#include "fuzz_check.h"

namespace {

constexpr int kDefaultSlots = 3;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string output(reinterpret_cast<const char*>(data), size);
  auto hosts = hvd::launcher::ParseDiscoveryOutput(output, kDefaultSlots);
  if (!hosts.ok()) {
    HVD_FUZZ_CHECK(hosts.status().code() ==
                   hvd::common::Code::kInvalidArgument);
    return 0;
  }
  std::set<std::string> names;
  std::string printed;
  for (const auto& entry : *hosts) {
    HVD_FUZZ_CHECK(!entry.host.empty());
    HVD_FUZZ_CHECK(entry.host.find_first_of(": \t\r\n") == std::string::npos);
    HVD_FUZZ_CHECK(entry.slots >= 1 && entry.slots <= 4096);
    HVD_FUZZ_CHECK(names.insert(entry.host).second);
    printed += entry.host + ":" + std::to_string(entry.slots) + "\n";
  }
  auto again = hvd::launcher::ParseDiscoveryOutput(printed, kDefaultSlots);
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->size() == hosts->size());
  for (size_t i = 0; i < hosts->size(); ++i) {
    HVD_FUZZ_CHECK((*again)[i].host == (*hosts)[i].host);
    HVD_FUZZ_CHECK((*again)[i].slots == (*hosts)[i].slots);
  }
  return 0;
}
