// RefusalLog: counts what a server refused (requests answered 4xx by the
// server core, connections dropped at a deadline or by admission) and turns
// the counts into at most one summary line per interval, so that a stranger
// sending thousands of bad requests a second costs a counter, not a log line
// each. The first refusal after a quiet interval is reported at once, so a
// worker with the wrong secret shows up in the log without delay.
//
// Pure and not thread-safe: the server's I/O thread owns it and passes the
// clock reading (steady milliseconds) in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::common {

class RefusalLog {
 public:
  RefusalLog(std::string server_name, int64_t interval_ms);

  // A request answered with `http_status` by the server core.
  void Refused(int http_status, std::string_view peer, std::string_view reason);
  // A connection closed without an answer (deadline, admission, garbage).
  void Dropped(std::string_view peer, std::string_view reason);

  // The line to log now, if something was refused and the last line is at
  // least the interval old (or `flush`: the server is stopping); the counts
  // then start again.
  std::optional<std::string> TakeSummary(int64_t now_ms, bool flush = false);

  uint64_t refused_total() const { return refused_total_; }
  uint64_t dropped_total() const { return dropped_total_; }

 private:
  void Remember(std::string_view peer, std::string_view reason);

  const std::string name_;
  const int64_t interval_ms_;
  std::optional<int64_t> last_summary_ms_;
  std::map<int, uint64_t> by_status_;  // since the last summary
  uint64_t dropped_ = 0;               // since the last summary
  std::string last_peer_;
  std::string last_reason_;
  uint64_t refused_total_ = 0;
  uint64_t dropped_total_ = 0;
};

}  // namespace hvd::common
