// Reading typed fields of parsed JSON from the other side of a connection,
// without nlohmann's conversions that are undefined or wrap on bad input.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace hvd::rendezvous::internal {

// The field `name` when it is a JSON integer that fits T. nlohmann's
// get<T>() also takes a float and converts it with a cast that is undefined
// behaviour out of range (1e19), and silently wraps integers that do not
// fit.
template <typename T>
std::optional<T> IntegerField(const nlohmann::json& json, const char* name) {
  auto it = json.find(name);
  if (it == json.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) {
    uint64_t value = it->get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return std::nullopt;
    }
    return static_cast<T>(value);
  }
  int64_t value = it->get<int64_t>();
  if (value < std::numeric_limits<T>::min() ||
      value > std::numeric_limits<T>::max()) {
    return std::nullopt;
  }
  return static_cast<T>(value);
}

}  // namespace hvd::rendezvous::internal
