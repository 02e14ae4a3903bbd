#include "bind_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

namespace hvd::runtime {

using common::Result;
using common::Status;

std::vector<InterfaceAddress> LocalInterfaces() {
  std::vector<InterfaceAddress> found;
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

std::vector<InterfaceAddress> UsableInterfaces(
    const std::vector<InterfaceAddress>& local,
    const std::string& rendezvous_addr) {
  auto loopback = [](const std::string& address) {
    return address.rfind("127.", 0) == 0;
  };
  if (loopback(rendezvous_addr)) return local;
  std::vector<InterfaceAddress> usable;
  for (const InterfaceAddress& candidate : local) {
    if (!loopback(candidate.address)) usable.push_back(candidate);
  }
  return usable;
}

Result<std::string> ChooseBindAddress(
    const std::string& interfaces, const std::vector<InterfaceAddress>& local,
    const std::string& route_source, const std::string& hostname) {
  if (!interfaces.empty()) {
    std::stringstream names(interfaces);
    std::string name;
    while (std::getline(names, name, ',')) {
      for (const InterfaceAddress& candidate : local) {
        if (candidate.name == name) return candidate.address;
      }
    }
    std::string here;
    for (const InterfaceAddress& candidate : local) {
      here += (here.empty() ? "" : ", ") + candidate.name;
    }
    return Status::InvalidArgument(
        "host " + hostname + " has none of the network interfaces '" +
        interfaces + "' (HOROVOD_GLOO_IFACE, hvdrun --network-interfaces) " +
        "with an IPv4 address; it has: " + (here.empty() ? "none" : here));
  }
  if (route_source.empty()) {
    return Status::InvalidArgument(
        "host " + hostname +
        " has no route to the rendezvous server; pass hvdrun "
        "--network-interfaces");
  }
  return route_source;
}

std::string RouteSource(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), "9", &hints, &found) != 0) return "";
  std::string source;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {0};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      source = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return source;
}

}  // namespace hvd::runtime
