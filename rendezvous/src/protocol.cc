#include "hvd/rendezvous/protocol.h"

#include <charconv>

namespace hvd::rendezvous::protocol {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

bool IsValidScope(std::string_view scope) {
  if (scope.empty() || scope.size() > 128) return false;
  for (char c : scope) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

bool IsValidKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!IsNameChar(c) && c != '~' && c != ':' && c != '/') return false;
  }
  return true;
}

std::string KvTarget(std::string_view scope, std::string_view key) {
  std::string target(kKvPath);
  target += scope;
  if (!key.empty()) {
    target += '/';
    target += key;
  }
  return target;
}

std::string GlooGenerationPrefix(int64_t generation) {
  return "g" + std::to_string(generation) + "/";
}

std::optional<int64_t> GlooKeyGeneration(std::string_view key) {
  const size_t slash = key.find('/');
  if (key.size() < 3 || key[0] != 'g' || slash == std::string_view::npos) {
    return std::nullopt;
  }
  // Digits only, as GlooGenerationPrefix writes them: "g+1/" or "g01/"
  // would name a generation the writer may not be in.
  std::string_view digits = key.substr(1, slash - 1);
  if (digits.empty() || digits[0] < '0' || digits[0] > '9' ||
      (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  int64_t generation = 0;
  auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), generation);
  if (error != std::errc() || end != digits.data() + digits.size() ||
      generation < 0) {
    return std::nullopt;
  }
  return generation;
}

}  // namespace hvd::rendezvous::protocol
