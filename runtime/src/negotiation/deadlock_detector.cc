#include "negotiation/deadlock_detector.h"

#include <algorithm>

namespace hvd::runtime {

namespace {

// A rank's pending collectives named in the message; more are counted.
constexpr size_t kNamesPerRank = 3;

const char* Ordinal(int64_t n) {
  if (n % 100 >= 11 && n % 100 <= 13) return "th";
  switch (n % 10) {
    case 1:
      return "st";
    case 2:
      return "nd";
    case 3:
      return "rd";
    default:
      return "th";
  }
}

std::string What(const PendingTensor& p) {
  const std::string op = OpTypeName(p.type);
  // Unnamed collectives are called "<op>.noname.<n>" inside hvd only; the
  // number tells two ranks' unnamed waits in the same op apart.
  if (auto number = UnnamedNumber(p.type, p.name)) {
    return op + " (unnamed, the set's " + std::to_string(*number) +
           Ordinal(*number) + " unnamed collective)";
  }
  return op + " '" + p.name + "'";
}

bool Contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

}  // namespace

DeadlockDetector::DeadlockDetector(std::vector<int> global_ranks,
                                   std::chrono::steady_clock::duration after)
    : global_ranks_(std::move(global_ranks)), after_(after) {}

std::optional<std::string> DeadlockDetector::Observe(
    SteadyTime now, const std::vector<bool>& waiting, bool responded,
    const std::vector<PendingTensor>& pending, const std::vector<int>& joined) {
  const bool all_waiting =
      std::all_of(waiting.begin(), waiting.end(), [](bool w) { return w; });
  if (!all_waiting || responded || waiting.empty()) {
    since_.reset();
    return std::nullopt;
  }
  if (!since_) since_ = now;
  if (now - *since_ < after_) return std::nullopt;
  if (pending.empty() && joined.empty()) return std::nullopt;
  // A collective every member has submitted is about to run, never a
  // deadlock, however long the members waited for it.
  if (std::any_of(pending.begin(), pending.end(),
                  [](const PendingTensor& p) { return p.missing.empty(); })) {
    return std::nullopt;
  }
  const auto waited = now - *since_;
  since_.reset();
  return DescribeDeadlock(global_ranks_, pending, joined, waited);
}

std::string DescribeDeadlock(const std::vector<int>& global_ranks,
                             const std::vector<PendingTensor>& pending,
                             const std::vector<int>& joined,
                             std::chrono::steady_clock::duration waited) {
  std::string ranks;
  for (int rank : global_ranks) {
    std::string line = "rank " + std::to_string(rank);
    if (Contains(joined, rank)) {
      line += " has joined (hvd.join) and waits for the others to join";
    } else {
      std::vector<std::string> whats;
      for (const PendingTensor& p : pending) {
        if (Contains(p.submitted, rank)) whats.push_back(What(p));
      }
      if (whats.empty()) {
        line +=
            " has nothing pending here (it waits on a collective of "
            "another process set)";
      } else {
        line += " waits in ";
        for (size_t i = 0; i < whats.size() && i < kNamesPerRank; ++i) {
          line += (i ? ", " : "") + whats[i];
        }
        if (whats.size() > kNamesPerRank) {
          line +=
              " and " + std::to_string(whats.size() - kNamesPerRank) + " more";
        }
      }
    }
    ranks += (ranks.empty() ? "" : "; ") + line;
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(waited).count();
  return "deadlock: every rank has waited " + std::to_string(seconds) +
         " s for a collective that no other rank will submit: " + ranks +
         ". No rank can go on, as each waits for what another has not "
         "called: the ranks' scripts diverged (e.g. a rank skipped a "
         "collective or a join after a failed step, or the ranks call "
         "collectives in a different order or under different names). Each "
         "of these collectives fails on every rank; make every rank call the "
         "same collectives in the same order (hvd ends such a wait after "
         "HOROVOD_GLOO_TIMEOUT_SECONDS)";
}

}  // namespace hvd::runtime
