#include "refusal_log.h"

#include "hvd/common/http_message.h"

namespace hvd::common {

RefusalLog::RefusalLog(std::string server_name, int64_t interval_ms)
    : name_(std::move(server_name)), interval_ms_(interval_ms) {}

void RefusalLog::Remember(std::string_view peer, std::string_view reason) {
  last_peer_ = Printable(peer, 64);
  last_reason_ = Printable(reason, 300);
}

void RefusalLog::Refused(int http_status, std::string_view peer,
                         std::string_view reason) {
  ++by_status_[http_status];
  ++refused_total_;
  Remember(peer, reason);
}

void RefusalLog::Dropped(std::string_view peer, std::string_view reason) {
  ++dropped_;
  ++dropped_total_;
  Remember(peer, reason);
}

std::optional<std::string> RefusalLog::TakeSummary(int64_t now_ms,
                                                   bool flush) {
  if (by_status_.empty() && dropped_ == 0) return std::nullopt;
  if (!flush && last_summary_ms_ &&
      now_ms - *last_summary_ms_ < interval_ms_) {
    return std::nullopt;
  }
  uint64_t requests = 0;
  std::string counts;
  for (const auto& [status, count] : by_status_) {
    requests += count;
    counts += std::to_string(status) + ": " + std::to_string(count) + ", ";
  }
  std::string line = name_ + ": refused " + std::to_string(requests) +
                     (requests == 1 ? " request" : " requests");
  line += last_summary_ms_ ? " in the last " +
                                 std::to_string((now_ms - *last_summary_ms_) /
                                                1000) +
                                 " s"
                           : "";
  line += " (" + counts + "dropped connections: " + std::to_string(dropped_) +
          "); last from " + last_peer_ + ": " + last_reason_;
  last_summary_ms_ = now_ms;
  by_status_.clear();
  dropped_ = 0;
  return line;
}

}  // namespace hvd::common
