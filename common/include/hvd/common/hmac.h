// Request signing for every hvd control-plane HTTP request.
//
// The launcher makes one random secret per job and hands it to workers in
// the environment. A request carries the time it was signed, a random nonce,
// the SHA-256 of its body and
//   HMAC-SHA256(secret, METHOD "\n" TARGET "\n" TIMESTAMP "\n" NONCE "\n"
//               BODY_SHA256)
// where TARGET is the request path with its query string exactly as sent.
// Everything the HMAC covers travels in the headers, so a server checks the
// signature before it reads a single body byte, then compares the body's
// digest with the signed one. The receiver refuses timestamps outside its
// window and nonces it has already seen inside it (ReplayGuard), so a
// captured request cannot be replayed. docs/protocol.md is the reference for
// clients in other languages.
//
// All functions are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::common {

inline constexpr char kTimestampHeader[] = "X-Hvd-Timestamp";
inline constexpr char kNonceHeader[] = "X-Hvd-Nonce";
inline constexpr char kContentSha256Header[] = "X-Hvd-Content-Sha256";
inline constexpr char kSignatureHeader[] = "X-Hvd-Signature";

// A nonce is 128 random bits written as 32 lower-case hex digits.
inline constexpr size_t kNonceHexDigits = 32;

// A fresh secret: 32 bytes from OpenSSL's CSPRNG, as 64 hex digits.
Result<std::string> NewJobSecret();

// A fresh nonce: 16 bytes from OpenSSL's CSPRNG, as 32 hex digits.
Result<std::string> NewNonce();

// `size` bytes as 2 * size lower-case hex digits.
std::string LowerHex(const unsigned char* data, size_t size);

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// Lower-case hex HMAC-SHA256 of `message` under `key`.
std::string HmacSha256Hex(std::string_view key, std::string_view message);

// Equal length and bytes, in time that depends only on the length.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// The four signature headers of one request, in header order.
struct SignatureHeaders {
  std::string timestamp;       // decimal milliseconds since the Unix epoch
  std::string nonce;           // kNonceHexDigits lower-case hex digits
  std::string content_sha256;  // Sha256Hex(body)
  std::string signature;       // SignRequest(...)

  // (header name, value) for each of the four, ready to add to a request.
  std::vector<std::pair<std::string, std::string>> Fields() const;
};

// The signature a request must carry (lower-case hex).
std::string SignRequest(std::string_view secret, std::string_view method,
                        std::string_view target, int64_t timestamp_ms,
                        std::string_view nonce,
                        std::string_view content_sha256);

// Headers for one attempt of a request: a fresh nonce, signed at `now_ms`.
// A retry must call this again (a repeated nonce is refused).
Result<SignatureHeaders> SignNewRequest(std::string_view secret,
                                        std::string_view method,
                                        std::string_view target,
                                        std::string_view body, int64_t now_ms);

// The signature headers as received; empty when absent.
struct ReceivedSignature {
  std::string_view timestamp;
  std::string_view nonce;
  std::string_view content_sha256;
  std::string_view signature;
};

// Checks everything the headers carry, without the body: all four present
// and well-formed, `timestamp` within `window` of `now_ms`, and the HMAC
// over method, target, timestamp, nonce and body digest. Returns the signing
// time, or kUnauthenticated with the reason. Pure: the caller passes the
// clock reading, and remembers the nonce (ReplayGuard) and compares the body
// with VerifyBody once it has read it.
Result<int64_t> VerifyRequestHeaders(std::string_view secret,
                                     std::string_view method,
                                     std::string_view target,
                                     const ReceivedSignature& received,
                                     int64_t now_ms,
                                     std::chrono::milliseconds window);

// Ok when `body` hashes to the signed `content_sha256`; kUnauthenticated
// otherwise (the body was changed after signing).
Status VerifyBody(std::string_view content_sha256, std::string_view body);

// Milliseconds since the Unix epoch, the clock signatures are checked on.
int64_t WallClockMs();

}  // namespace hvd::common
