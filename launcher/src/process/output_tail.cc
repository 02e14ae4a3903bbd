#include "process/output_tail.h"

namespace hvd::launcher {

void OutputTail::Add(std::string_view line, bool is_stderr) {
  Line kept{is_stderr, std::string(line.substr(0, kMaxLineBytes))};
  if (line.size() > kMaxLineBytes) kept.text += "...";
  std::lock_guard<std::mutex> lock(mu_);
  lines_.push_back(std::move(kept));
  if (lines_.size() > kMaxLines) lines_.pop_front();
}

std::vector<OutputTail::Line> OutputTail::Lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {lines_.begin(), lines_.end()};
}

}  // namespace hvd::launcher
