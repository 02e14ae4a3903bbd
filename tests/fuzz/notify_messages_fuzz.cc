// Fuzzes the decoding of the driver's messages to workers
// (notify/src/messages.cc) with arbitrary request bodies: malformed ones are
// kInvalidArgument, and one that decodes survives encode and decode again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "hvd/notify/messages.h"

namespace {

using hvd::common::Code;
using hvd::notify::DecodeAbort;
using hvd::notify::DecodeHostsUpdated;
using hvd::notify::Encode;

void CheckHostsUpdated(const std::string& body) {
  auto message = DecodeHostsUpdated(body);
  if (!message.ok()) {
    HVD_FUZZ_CHECK(message.status().code() == Code::kInvalidArgument);
    return;
  }
  HVD_FUZZ_CHECK(message->sequence > 0);
  auto again = DecodeHostsUpdated(Encode(*message));
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->generation == message->generation);
  HVD_FUZZ_CHECK(again->sequence == message->sequence);
  HVD_FUZZ_CHECK(again->added == message->added);
  HVD_FUZZ_CHECK(again->removed == message->removed);
}

void CheckAbort(const std::string& body) {
  auto message = DecodeAbort(body);
  if (!message.ok()) {
    HVD_FUZZ_CHECK(message.status().code() == Code::kInvalidArgument);
    return;
  }
  auto again = DecodeAbort(Encode(*message));
  HVD_FUZZ_CHECK(again.ok());
  HVD_FUZZ_CHECK(again->generation == message->generation);
  HVD_FUZZ_CHECK(again->reason == message->reason);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  CheckHostsUpdated(body);
  CheckAbort(body);
  return 0;
}
