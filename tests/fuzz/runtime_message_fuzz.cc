// Fuzzes the decoding of the negotiation messages between ranks
// (runtime/src/negotiation/message.cc) with arbitrary bytes. A message that
// decodes must survive a round trip: encode(decode(bytes)) decodes to a message
// that encodes to the same bytes again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "negotiation/message.h"

namespace {

template <typename List>
void CheckRoundTrip(const std::string& bytes) {
  List first;
  if (!hvd::runtime::Decode(bytes, &first).ok()) return;
  const std::string encoded = hvd::runtime::Encode(first);
  List second;
  HVD_FUZZ_CHECK(hvd::runtime::Decode(encoded, &second).ok());
  HVD_FUZZ_CHECK(hvd::runtime::Encode(second) == encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip<hvd::runtime::RequestList>(bytes);
  CheckRoundTrip<hvd::runtime::ResponseList>(bytes);
  return 0;
}
