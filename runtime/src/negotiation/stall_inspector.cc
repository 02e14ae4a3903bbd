#include "negotiation/stall_inspector.h"

#include <spdlog/spdlog.h>

namespace hvd::runtime {

namespace {

std::string Ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::optional<std::string> StallInspector::Check(
    const std::vector<PendingTensor>& pending, SteadyTime now) {
  std::string stalled;
  bool stop = false;
  std::unordered_map<std::string, SteadyTime> still_warned;
  for (const PendingTensor& p : pending) {
    const auto waited = now - p.first_seen;
    if (p.missing.empty() || waited < options_.warn_after) continue;
    auto last = warned_.find(p.name);
    const bool due =
        last == warned_.end() || now - last->second >= options_.warn_after;
    still_warned[p.name] = due ? now : last->second;
    if (due) {
      stalled += "\n  " + std::string(OpTypeName(p.type)) + " '" + p.name +
                 "': waiting " +
                 std::to_string(static_cast<int>(Seconds(waited))) +
                 " s for rank(s) " + Ranks(p.missing);
    }
    if (options_.shutdown_after.count() > 0 &&
        waited >= options_.shutdown_after) {
      stop = true;
    }
  }
  warned_ = std::move(still_warned);
  if (!stalled.empty()) {
    std::string warning =
        "stall: some ranks have submitted these collectives and others have "
        "not (a rank skipped one, or is stuck outside hvd):" +
        stalled;
    spdlog::warn("{}", warning);
    last_warning_ = std::move(warning);
    ++warning_count_;
    if (options_.stats) options_.stats->StallWarned();
  }
  if (!stop) return std::nullopt;
  std::string reason;
  for (const PendingTensor& p : pending) {
    if (!p.missing.empty() && now - p.first_seen >= options_.shutdown_after) {
      reason += (reason.empty() ? "" : "; ") + std::string("'") + p.name +
                "' waited for rank(s) " + Ranks(p.missing);
    }
  }
  return "stall inspector: collectives waited more than " +
         std::to_string(static_cast<int>(Seconds(options_.shutdown_after))) +
         " s (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) for some ranks: " + reason;
}

}  // namespace hvd::runtime
