#include "remote/host_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "hvd/common/network_interfaces.h"

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

std::string AddressText(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr,
              text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr,
              text, sizeof(text));
  }
  return text;
}

std::set<std::string> InterfaceAddresses() {
  std::set<std::string> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addresses;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr != nullptr) addresses.insert(AddressText(it->ifa_addr));
  }
  freeifaddrs(list);
  return addresses;
}

bool IsLoopback(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    uint32_t ip =
        ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(
        &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr);
  }
  return false;
}

}  // namespace

bool IsLocalHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  std::set<std::string> local = InterfaceAddresses();
  bool is_local = false;
  for (addrinfo* it = found; it != nullptr && !is_local; it = it->ai_next) {
    is_local = IsLoopback(it->ai_addr) || local.count(AddressText(it->ai_addr));
  }
  freeaddrinfo(found);
  return is_local;
}

Result<std::string> ChooseServerAddress(const std::vector<HostSlots>& hosts,
                                        const std::string& network_interfaces) {
  const HostSlots* remote = nullptr;
  for (const HostSlots& host : hosts) {
    if (!IsLocalHost(host.host)) {
      remote = &host;
      break;
    }
  }
  if (remote == nullptr) return std::string("127.0.0.1");
  if (!network_interfaces.empty()) {
    // Some host is another machine: a loopback interface cannot serve it.
    std::vector<common::NetworkInterface> here = common::LocalInterfaces();
    const auto wanted = common::SplitInterfaceList(network_interfaces);
    auto chosen =
        common::FirstListedInterface(wanted, common::WithoutLoopback(here));
    if (!chosen) {
      const bool only_loopback =
          common::FirstListedInterface(wanted, here).has_value();
      return Status::InvalidArgument(
          "this machine has none of the network interfaces " +
          network_interfaces + " (--network-interfaces) with an IPv4 address" +
          (only_loopback ? " but loopback, which does not count when the job "
                           "spans machines"
                         : "") +
          "; it has: " + common::InterfaceNames(here));
    }
    return chosen->address;
  }
  // Connecting a UDP socket sends nothing; it only picks the route.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(remote->host.c_str(), "9", &hints, &found) != 0) {
    return Status::InvalidArgument("cannot resolve host '" + remote->host +
                                   "'");
  }
  std::string address;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      address = AddressText(reinterpret_cast<sockaddr*>(&local));
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (address.empty()) {
    return Status::InvalidArgument("no route from this machine to host '" +
                                   remote->host +
                                   "'; pass --network-interface");
  }
  return address;
}

}  // namespace hvd::launcher
