// Fuzzes common::VerifyRequest, the first thing the rendezvous and
// notification servers do with a request, with method, target, header values
// and body from anyone.
// Input: METHOD '\n' TARGET '\n' TIMESTAMP '\n' SIGNATURE '\n' BODY.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "hvd/common/env.h"
#include "hvd/common/hmac.h"

namespace {

using hvd::common::Code;
using hvd::common::SignRequest;
using hvd::common::VerifyRequest;

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";
constexpr int64_t kNowMs = 1700000000000;  // a wall clock of 2023
constexpr std::chrono::milliseconds kWindow(60000);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fields = hvd::fuzz::SplitFields(data, size, 5);
  const std::string& method = fields[0];
  const std::string& target = fields[1];
  const std::string& timestamp = fields[2];
  const std::string& signature = fields[3];
  const std::string& body = fields[4];

  // Whatever the headers, the answer is Ok or kUnauthenticated, and Ok only
  // for the signature of exactly these bytes at a timestamp in the window.
  auto status = VerifyRequest(kSecret, method, target, timestamp, signature,
                              body, kNowMs, kWindow);
  HVD_FUZZ_CHECK(status.ok() || status.code() == Code::kUnauthenticated);
  if (status.ok()) {
    auto ts = hvd::common::ParseInt(timestamp, "timestamp");
    HVD_FUZZ_CHECK(ts.ok());
    HVD_FUZZ_CHECK(*ts >= kNowMs - kWindow.count() &&
                   *ts <= kNowMs + kWindow.count());
    HVD_FUZZ_CHECK(signature ==
                   SignRequest(kSecret, method, target, *ts, body));
  }

  // The same request signed by the secret's holder passes; a different
  // signature, another secret or a timestamp out of the window does not.
  const int64_t signed_at = kNowMs - static_cast<int64_t>(size % 1000);
  const std::string genuine =
      SignRequest(kSecret, method, target, signed_at, body);
  const std::string signed_ts = std::to_string(signed_at);
  HVD_FUZZ_CHECK(VerifyRequest(kSecret, method, target, signed_ts, genuine,
                               body, kNowMs, kWindow)
                     .ok());
  if (signature != genuine) {
    HVD_FUZZ_CHECK(!VerifyRequest(kSecret, method, target, signed_ts, signature,
                                  body, kNowMs, kWindow)
                        .ok());
  }
  HVD_FUZZ_CHECK(!VerifyRequest(kSecret, method, target, signed_ts,
                                SignRequest("another secret", method, target,
                                            signed_at, body),
                                body, kNowMs, kWindow)
                      .ok());
  const int64_t stale = kNowMs - kWindow.count() - 1;
  HVD_FUZZ_CHECK(
      !VerifyRequest(kSecret, method, target, std::to_string(stale),
                     SignRequest(kSecret, method, target, stale, body), body,
                     kNowMs, kWindow)
           .ok());
  return 0;
}
