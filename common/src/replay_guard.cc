#include "replay_guard.h"

#include <algorithm>
#include <string>

#include "hvd/common/hmac.h"

namespace hvd::common {
namespace {

bool ParseNonce(std::string_view text, std::array<uint64_t, 2>* out) {
  if (text.size() != kNonceHexDigits) return false;
  (*out) = {0, 0};
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    uint64_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return false;
    }
    uint64_t& word = (*out)[i / 16];
    word = (word << 4) | digit;
  }
  return true;
}

// The floor is where the guard's memory ran out, not a fault of the request:
// an honest request that was merely slow to arrive lands below it too. So it
// is kResourceExhausted, which the server answers 503, and clients retry 503
// with a fresh signature that passes the floor (a 401 would be final, and a
// secret holder flooding the guard could fail every worker that way). A
// replay below the floor is still refused; retrying it never helps.
Status BelowFloor() {
  return Status::ResourceExhausted(
      "request signed before what the replay guard still remembers (too "
      "many requests inside the window); retry, signed again");
}

}  // namespace

ReplayGuard::ReplayGuard(std::chrono::milliseconds window, size_t capacity)
    : window_ms_(std::max<int64_t>(window.count(), 0)),
      bucket_ms_(std::max<int64_t>(window_ms_ / 64, 1)),
      capacity_(std::max<size_t>(capacity, 1)) {}

void ReplayGuard::Expire(int64_t now_ms) {
  while (!buckets_.empty()) {
    auto oldest = buckets_.begin();
    int64_t newest_ts_in_bucket = (oldest->first + 1) * bucket_ms_ - 1;
    if (newest_ts_in_bucket + window_ms_ >= now_ms) break;
    size_ -= oldest->second.size();
    buckets_.erase(oldest);
  }
}

Status ReplayGuard::Admit(std::string_view nonce, int64_t timestamp_ms,
                          int64_t now_ms) {
  Nonce key;
  if (!ParseNonce(nonce, &key)) {
    return Status::InvalidArgument("nonce is not " +
                                   std::to_string(kNonceHexDigits) +
                                   " lower-case hex digits");
  }
  Expire(now_ms);
  if (timestamp_ms < floor_ms_) return BelowFloor();
  const int64_t index = timestamp_ms / bucket_ms_;
  auto found = buckets_.find(index);
  if (found != buckets_.end() && found->second.count(key) > 0) {
    return Status::Unauthenticated(
        "replayed request (this nonce was already used)");
  }
  // Full: forget the oldest buckets, never the newest one (that would
  // refuse requests signed just now).
  while (size_ >= capacity_ && !buckets_.empty()) {
    auto oldest = buckets_.begin();
    if (oldest->first >= std::max(index, buckets_.rbegin()->first)) break;
    floor_ms_ = std::max(floor_ms_, (oldest->first + 1) * bucket_ms_);
    size_ -= oldest->second.size();
    buckets_.erase(oldest);
  }
  if (timestamp_ms < floor_ms_) return BelowFloor();
  if (size_ >= capacity_) {
    return Status::ResourceExhausted(
        "the replay guard holds " + std::to_string(capacity_) +
        " nonces signed within " + std::to_string(bucket_ms_) +
        " ms; retry later");
  }
  buckets_[index].insert(key);
  ++size_;
  return Status::Ok();
}

}  // namespace hvd::common
