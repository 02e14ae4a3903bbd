#include "options/option_numbers.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace hvd::launcher {

namespace {

// A bound of a number flag: a whole number or a short decimal.
std::string Plain(double bound) {
  if (bound == std::floor(bound)) {
    return std::to_string(static_cast<int64_t>(bound));
  }
  std::ostringstream out;
  out << bound;
  return out.str();
}

constexpr int64_t kMaxCore = 65535;

// "" when `text` is CPU core numbers separated by commas ("3" or "0,4").
std::string CheckCoreList(const std::string& text) {
  std::stringstream items(text);
  std::string item;
  bool good = !text.empty() && text.back() != ',';
  while (good && std::getline(items, item, ',')) {
    good = CheckWholeNumber(item, 0, kMaxCore).empty();
  }
  if (!good) {
    return Quoted(text) + " is not a list of CPU core numbers (0 to " +
           std::to_string(kMaxCore) +
           "), one per local rank, separated by commas";
  }
  return "";
}

}  // namespace

std::string Quoted(const std::string& text) {
  constexpr size_t kShown = 40;
  if (text.size() <= kShown) return "'" + text + "'";
  return "'" + text.substr(0, kShown) + "...'";
}

std::string CheckWholeNumber(const std::string& text, int64_t min,
                             int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || stop != end || error != std::errc() || value < min ||
      value > max) {
    return Quoted(text) + " is not a whole number from " + std::to_string(min) +
           " to " + std::to_string(max);
  }
  return "";
}

std::string CheckDecimal(const std::string& text, double min, bool min_included,
                         double max, const std::string& unit) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  bool in_range = min_included ? value >= min : value > min;
  if (text.empty() || stop != end || error != std::errc() ||
      !std::isfinite(value) || !in_range || value > max) {
    return Quoted(text) + " is not a number" +
           (unit.empty() ? "" : " of " + unit) +
           (min_included ? " from " : " above ") + Plain(min) +
           (min_included ? " to " : " and at most ") + Plain(max);
  }
  return "";
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) {
        return CheckWholeNumber(text, min, max);
      },
      "in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

CLI::Validator Decimal(double min, bool min_included, double max,
                       const std::string& unit) {
  return CLI::Validator(
      [=](std::string& text) {
        return CheckDecimal(text, min, min_included, max, unit);
      },
      unit + " in " + (min_included ? "[" : "(") + Plain(min) + ", " +
          Plain(max) + "]");
}

std::chrono::seconds CeilSeconds(double seconds) {
  return std::chrono::seconds(static_cast<int64_t>(std::ceil(seconds)));
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

CLI::Validator CoreList() {
  return CLI::Validator([](std::string& text) { return CheckCoreList(text); },
                        "CORE[,CORE...]");
}

}  // namespace hvd::launcher
