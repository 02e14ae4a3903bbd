#include "hvd/common/worker_key.h"

#include <charconv>
#include <optional>

#include "hvd/common/hmac.h"

namespace hvd::common {

std::string WorkerIdentity::Header() const {
  return std::to_string(worker) + "@" + slot;
}

std::string WorkerIdentity::Describe() const {
  return "worker " + std::to_string(worker) + " (slot " + slot + ")";
}

Result<WorkerIdentity> ParseWorkerIdentity(std::string_view header) {
  const size_t at = header.find('@');
  WorkerIdentity who;
  const char* end = header.data() + (at == std::string_view::npos ? 0 : at);
  auto [stop, error] = std::from_chars(header.data(), end, who.worker);
  std::string_view slot =
      at == std::string_view::npos ? std::string_view() : header.substr(at + 1);
  bool printable = true;
  for (char c : slot) printable = printable && c > ' ' && c < 0x7f;
  // The id as Header() writes it (no leading zero), so that one worker has
  // one name.
  if (at == std::string_view::npos || at == 0 || header[0] == '0' ||
      error != std::errc() || stop != end || who.worker < 1 || slot.empty() ||
      slot.size() > kMaxSlotBytes || !printable) {
    return Status::Unauthenticated(
        std::string(kWorkerHeader) +
        " is not <worker id>@<slot> (an id from 1, a slot of 1-" +
        std::to_string(kMaxSlotBytes) + " printable bytes)");
  }
  who.slot = std::string(slot);
  return who;
}

std::string WorkerKey(std::string_view job_secret, const WorkerIdentity& who) {
  return HmacSha256Hex(
      job_secret,
      "hvd worker key\n" + std::to_string(who.worker) + "\n" + who.slot);
}

std::string GenerationsKey(std::string_view job_secret) {
  return HmacSha256Hex(job_secret, "hvd generations key");
}

std::string GenerationKey(std::string_view generations_key,
                          int64_t generation) {
  return HmacSha256Hex(generations_key,
                       "hvd generation key\n" + std::to_string(generation));
}

namespace {

constexpr size_t kKeyDigits = 64;

int KeyDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Each hex digit of `text` XOR the pad's digit at its place; nullopt when
// `text` is not kKeyDigits lower-case hex digits. Its own inverse.
std::optional<std::string> XorPad(std::string_view worker_key,
                                  int64_t generation, std::string_view text) {
  if (text.size() != kKeyDigits) return std::nullopt;
  const std::string pad = HmacSha256Hex(
      worker_key, "hvd generation key wrap\n" + std::to_string(generation));
  std::string out(kKeyDigits, '0');
  for (size_t i = 0; i < kKeyDigits; ++i) {
    const int digit = KeyDigitValue(text[i]);
    if (digit < 0) return std::nullopt;
    out[i] = "0123456789abcdef"[digit ^ KeyDigitValue(pad[i])];
  }
  return out;
}

}  // namespace

std::string WrapGenerationKey(std::string_view worker_key, int64_t generation,
                              std::string_view generation_key) {
  return XorPad(worker_key, generation, generation_key).value_or("");
}

Result<std::string> UnwrapGenerationKey(std::string_view worker_key,
                                        int64_t generation,
                                        std::string_view wrapped) {
  auto key = XorPad(worker_key, generation, wrapped);
  if (!key) {
    return Status::Unauthenticated(
        "the check-in answer's generation key is not 64 hex digits");
  }
  return *key;
}

Result<const WorkerKeyCache::Entry*> WorkerKeyCache::Lookup(
    std::string_view job_secret, const std::string& header) {
  auto found = entries_.find(header);
  if (found != entries_.end()) return &found->second;
  auto who = ParseWorkerIdentity(header);
  if (!who.ok()) return who.status();
  if (entries_.size() >= capacity_) entries_.clear();
  std::string key = WorkerKey(job_secret, *who);
  return &entries_.emplace(header, Entry{std::move(*who), std::move(key)})
              .first->second;
}

}  // namespace hvd::common
