// "Did you mean ...?" for a misspelled option or config-file key: the known
// name closest to what was typed, by edit distance. Pure; unit-tested.
#pragma once

#include <string>
#include <vector>

namespace hvd::launcher {

// Levenshtein distance (insert, delete, substitute one character).
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate nearest to `typed`, or "" when none is near enough to be a
// likely typo: at most 2 edits, or a third of the typed length for long
// names. Ties go to the earlier candidate.
std::string ClosestName(const std::string& typed,
                        const std::vector<std::string>& candidates);

}  // namespace hvd::launcher
