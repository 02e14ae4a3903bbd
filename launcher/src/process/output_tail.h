// OutputTail: the last lines a worker printed, kept so that a failure on
// the status page shows what the worker said before it went. Bounded: at
// most kMaxLines lines of at most kMaxLineBytes bytes each.
//
// Thread-safe: the output relay's thread adds, the driver's status
// snapshot reads.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::launcher {

class OutputTail {
 public:
  static constexpr size_t kMaxLines = 20;
  static constexpr size_t kMaxLineBytes = 500;

  // One line without its newline; a longer one is cut and ends in "...".
  void Add(std::string_view line, bool is_stderr);

  struct Line {
    bool is_stderr = false;
    std::string text;
  };
  std::vector<Line> Lines() const;

 private:
  mutable std::mutex mu_;
  std::deque<Line> lines_;
};

}  // namespace hvd::launcher
