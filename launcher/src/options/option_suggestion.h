// "Did you mean ...?" for a misspelled option or config-file key: the known
// name closest to what was typed, by edit distance. Pure; unit-tested.
#pragma once

#include <string>
#include <vector>

namespace hvd::launcher {

// Levenshtein distance (insert, delete, substitute one character).
size_t EditDistance(const std::string& a, const std::string& b);

// The candidates that begin with `typed` (of two characters or more), in
// their order.
std::vector<std::string> NamesStartingWith(
    const std::string& typed, const std::vector<std::string>& candidates);

// The candidate `typed` most likely stands for, or "" when none is near
// enough to be a likely typo: the shortest one that begins with it (a word
// cut short: -n for -np), else the nearest by edit distance, at most 2
// edits, or a third of the typed length for long names. Ties go to the
// earlier candidate.
std::string ClosestName(const std::string& typed,
                        const std::vector<std::string>& candidates);

}  // namespace hvd::launcher
