#include "hvd/common/network_interfaces.h"

#include <unistd.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <set>
#include <sstream>

namespace hvd::common {

std::string ThisHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::vector<NetworkInterface> LocalInterfaces() {
  std::vector<NetworkInterface> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr,
              text, sizeof(text));
    found.push_back({it->ifa_name, text});
  }
  freeifaddrs(list);
  return found;
}

std::vector<std::string> SplitInterfaceList(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream words(list);
  std::string name;
  while (std::getline(words, name, ',')) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

bool IsLoopbackAddress(const std::string& address) {
  return address.rfind("127.", 0) == 0;
}

std::vector<NetworkInterface> WithoutLoopback(
    const std::vector<NetworkInterface>& have) {
  std::vector<NetworkInterface> routable;
  for (const NetworkInterface& candidate : have) {
    if (!IsLoopbackAddress(candidate.address)) routable.push_back(candidate);
  }
  return routable;
}

std::optional<NetworkInterface> FirstListedInterface(
    const std::vector<std::string>& wanted,
    const std::vector<NetworkInterface>& have) {
  for (const std::string& name : wanted) {
    for (const NetworkInterface& candidate : have) {
      if (candidate.name == name) return candidate;
    }
  }
  return std::nullopt;
}

std::string InterfaceNames(const std::vector<NetworkInterface>& have) {
  std::string names;
  std::set<std::string> seen;
  for (const NetworkInterface& candidate : have) {
    if (!seen.insert(candidate.name).second) continue;
    names += (names.empty() ? "" : ", ") + candidate.name;
  }
  return names.empty() ? "none" : names;
}

}  // namespace hvd::common
