// Fuzzes common::VerifyRequestHeaders and VerifyBody, the first thing the
// rendezvous and notification servers do with a request, with method,
// target, header values and body from anyone.
// Input: METHOD '\n' TARGET '\n' TIMESTAMP '\n' NONCE '\n' DIGEST '\n'
// SIGNATURE '\n' BODY.
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
using hvd::common::ReceivedSignature;
using hvd::common::Sha256Hex;
using hvd::common::SignRequest;
using hvd::common::VerifyBody;
using hvd::common::VerifyRequestHeaders;

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";
constexpr char kNonce[] = "00112233445566778899aabbccddeeff";
constexpr int64_t kNowMs = 1700000000000;  // a wall clock of 2023
constexpr std::chrono::milliseconds kWindow(60000);

bool Passes(const std::string& method, const std::string& target,
            const std::string& timestamp, const std::string& nonce,
            const std::string& digest, const std::string& signature) {
  ReceivedSignature received{timestamp, nonce, digest, signature};
  return VerifyRequestHeaders(kSecret, method, target, received, kNowMs,
                              kWindow)
      .ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fields = hvd::fuzz::SplitFields(data, size, 7);
  const std::string& method = fields[0];
  const std::string& target = fields[1];
  const std::string& timestamp = fields[2];
  const std::string& nonce = fields[3];
  const std::string& digest = fields[4];
  const std::string& signature = fields[5];
  const std::string& body = fields[6];

  // Whatever the headers, the answer is a time or kUnauthenticated, and a
  // time only for the signature of exactly these parts within the window.
  ReceivedSignature received{timestamp, nonce, digest, signature};
  auto checked = VerifyRequestHeaders(kSecret, method, target, received,
                                      kNowMs, kWindow);
  HVD_FUZZ_CHECK(checked.ok() ||
                 checked.status().code() == Code::kUnauthenticated);
  if (checked.ok()) {
    HVD_FUZZ_CHECK(*checked >= kNowMs - kWindow.count() &&
                   *checked <= kNowMs + kWindow.count());
    HVD_FUZZ_CHECK(signature ==
                   SignRequest(kSecret, method, target, *checked, nonce,
                               digest));
  }
  auto body_ok = VerifyBody(digest, body);
  HVD_FUZZ_CHECK(body_ok.ok() == (digest == Sha256Hex(body)));

  // The same request signed by the secret's holder passes; a different
  // signature, another secret or a timestamp out of the window does not.
  const int64_t signed_at = kNowMs - static_cast<int64_t>(size % 1000);
  const std::string ts = std::to_string(signed_at);
  const std::string sha = Sha256Hex(body);
  const std::string genuine =
      SignRequest(kSecret, method, target, signed_at, kNonce, sha);
  HVD_FUZZ_CHECK(Passes(method, target, ts, kNonce, sha, genuine));
  HVD_FUZZ_CHECK(VerifyBody(sha, body).ok());
  if (signature != genuine) {
    HVD_FUZZ_CHECK(!Passes(method, target, ts, kNonce, sha, signature));
  }
  HVD_FUZZ_CHECK(!Passes(method, target, ts, kNonce, sha,
                         SignRequest("another secret", method, target,
                                     signed_at, kNonce, sha)));
  const int64_t stale = kNowMs - kWindow.count() - 1;
  HVD_FUZZ_CHECK(!Passes(method, target, std::to_string(stale), kNonce, sha,
                         SignRequest(kSecret, method, target, stale, kNonce,
                                     sha)));
  return 0;
}
