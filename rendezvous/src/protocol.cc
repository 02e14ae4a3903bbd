#include "hvd/rendezvous/protocol.h"

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

}  // namespace hvd::rendezvous::protocol
