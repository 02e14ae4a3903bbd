#include "hvd/common/worker_key.h"

#include <charconv>

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
