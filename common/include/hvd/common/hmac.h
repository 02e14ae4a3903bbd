// Request signing for every hvd control-plane HTTP request.
//
// The launcher makes one random secret per job and hands it to workers in
// the environment. A request carries the time it was signed and
// HMAC-SHA256(secret, METHOD "\n" TARGET "\n" TIMESTAMP "\n" BODY), where
// TARGET is the request path with its query string exactly as sent. The
// receiver recomputes it, compares in constant time and refuses timestamps
// outside its window, so a captured request cannot be replayed later.
// docs/protocol.md is the reference for clients in other languages.
//
// All functions are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "hvd/common/status.h"

namespace hvd::common {

inline constexpr char kTimestampHeader[] = "X-Hvd-Timestamp";
inline constexpr char kSignatureHeader[] = "X-Hvd-Signature";

// A fresh secret: 32 bytes from OpenSSL's CSPRNG, as 64 hex digits.
Result<std::string> NewJobSecret();

// Lower-case hex HMAC-SHA256 of `message` under `key`.
std::string HmacSha256Hex(std::string_view key, std::string_view message);

// Equal length and bytes, in time that depends only on the length.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// The signature a request must carry (lower-case hex).
std::string SignRequest(std::string_view secret, std::string_view method,
                        std::string_view target, int64_t timestamp_ms,
                        std::string_view body);

// Ok when `signature` is valid for the request and `timestamp` (decimal
// milliseconds since the Unix epoch) lies within `window` of `now_ms`;
// kUnauthenticated with the reason otherwise. Pure: the caller passes the
// clock reading.
Status VerifyRequest(std::string_view secret, std::string_view method,
                     std::string_view target, std::string_view timestamp,
                     std::string_view signature, std::string_view body,
                     int64_t now_ms, std::chrono::milliseconds window);

// Milliseconds since the Unix epoch, the clock signatures are checked on.
int64_t WallClockMs();

}  // namespace hvd::common
