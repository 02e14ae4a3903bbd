// Splits a fuzz input into text fields, so that seed inputs stay readable
// files: FIELD1 '\n' FIELD2 '\n' ... with the last field taking the rest
// (newlines included). Missing fields are empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd::fuzz {

inline std::vector<std::string> SplitFields(const uint8_t* data, size_t size,
                                            size_t count) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> fields;
  size_t start = 0;
  while (fields.size() + 1 < count) {
    size_t newline = input.find('\n', start);
    if (newline == std::string::npos) break;
    fields.push_back(input.substr(start, newline - start));
    start = newline + 1;
  }
  fields.push_back(start <= input.size() ? input.substr(start) : "");
  fields.resize(count);
  return fields;
}

}  // namespace hvd::fuzz
