#include "transport/bind_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hvd::runtime {

using common::NetworkInterface;
using common::Result;
using common::Status;

std::vector<NetworkInterface> UsableInterfaces(
    const std::vector<NetworkInterface>& local,
    const std::string& rendezvous_addr) {
  return common::IsLoopbackAddress(rendezvous_addr)
             ? local
             : common::WithoutLoopback(local);
}

Result<std::string> ChooseBindAddress(
    const std::string& interfaces, const std::vector<NetworkInterface>& local,
    const std::string& route_source, const std::string& hostname) {
  if (!interfaces.empty()) {
    auto chosen = common::FirstListedInterface(
        common::SplitInterfaceList(interfaces), local);
    if (chosen) return chosen->address;
    return Status::InvalidArgument(
        "host " + hostname + " has none of the network interfaces '" +
        interfaces + "' (HOROVOD_GLOO_IFACE, hvdrun --network-interfaces) " +
        "with an IPv4 address; it has: " + common::InterfaceNames(local));
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
