// ReplayGuard: the nonces of accepted requests, remembered for as long as
// their timestamps pass the signature window, so a captured request that is
// sent again inside the window is refused.
//
// A request signed at `ts` is accepted while |now - ts| <= window, so its
// nonce must be remembered until now > ts + window and never longer. Nonces
// are kept in buckets of signing time (window / 64 wide); a whole bucket is
// dropped once every timestamp in it is outside the window. A replay carries
// the same signed timestamp, so it is looked up in one bucket only.
//
// Memory is bounded by `capacity` nonces. Only requests with a valid
// signature reach the guard, so only a holder of the secret can fill it; if
// that happens, the oldest buckets are forgotten and the guard refuses every
// timestamp older than what it still remembers (a "floor"), so forgetting
// never reopens a replay; that refusal is a retry-later (503), since an
// honest request can be below the floor too.
//
// Pure and not thread-safe: the server's I/O thread owns it, and passes the
// clock reading in.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string_view>
#include <unordered_set>

#include "hvd/common/status.h"

namespace hvd::common {

class ReplayGuard {
 public:
  ReplayGuard(std::chrono::milliseconds window, size_t capacity);

  // Ok, and the nonce is remembered, for the first request with this nonce.
  // kUnauthenticated for a nonce already seen at this timestamp;
  // kInvalidArgument for a nonce that is not kNonceHexDigits hex digits;
  // kResourceExhausted when the guard's memory is what refuses it: a
  // timestamp below the floor, or the newest bucket alone holding `capacity`
  // nonces (the caller answers 503, which clients retry signed anew).
  Status Admit(std::string_view nonce, int64_t timestamp_ms, int64_t now_ms);

  size_t size() const { return size_; }
  // Timestamps below this are refused; INT64_MIN until the cap was hit.
  int64_t floor_ms() const { return floor_ms_; }

 private:
  using Nonce = std::array<uint64_t, 2>;
  struct NonceHash {
    size_t operator()(const Nonce& n) const { return n[0] ^ (n[1] * 31); }
  };
  using Bucket = std::unordered_set<Nonce, NonceHash>;

  void Expire(int64_t now_ms);

  const int64_t window_ms_;
  const int64_t bucket_ms_;
  const size_t capacity_;
  int64_t floor_ms_ = INT64_MIN;
  size_t size_ = 0;
  std::map<int64_t, Bucket> buckets_;  // by timestamp / bucket_ms_
};

}  // namespace hvd::common
