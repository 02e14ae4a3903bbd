#include "options/option_suggestion.h"

#include <algorithm>
#include <numeric>

namespace hvd::launcher {

size_t EditDistance(const std::string& a, const std::string& b) {
  // One row of the dynamic-programming table at a time.
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> NamesStartingWith(
    const std::string& typed, const std::vector<std::string>& candidates) {
  std::vector<std::string> names;
  if (typed.size() < 2) return names;
  for (const auto& candidate : candidates) {
    if (candidate.size() > typed.size() && candidate.rfind(typed, 0) == 0) {
      names.push_back(candidate);
    }
  }
  return names;
}

std::string ClosestName(const std::string& typed,
                        const std::vector<std::string>& candidates) {
  std::string shortest;
  for (const auto& name : NamesStartingWith(typed, candidates)) {
    if (shortest.empty() || name.size() < shortest.size()) shortest = name;
  }
  if (!shortest.empty()) return shortest;
  const size_t allowed = std::max<size_t>(2, typed.size() / 3);
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& candidate : candidates) {
    size_t distance = EditDistance(typed, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace hvd::launcher
