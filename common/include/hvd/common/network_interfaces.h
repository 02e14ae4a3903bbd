// Network interfaces by name, as hvdrun's --network-interfaces (and the
// workers' HOROVOD_GLOO_IFACE) name them: the list horovodrun takes
// ("eth0,eth1") and which interface of a host it selects. The launcher and
// the workers decide alike with these. LocalInterfaces reads this machine;
// everything else is pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hvd::common {

// An interface with an IPv4 address (one entry per address).
struct NetworkInterface {
  std::string name;
  std::string address;  // dotted IPv4
  bool operator==(const NetworkInterface& other) const {
    return name == other.name && address == other.address;
  }
};

// This machine's interfaces that have an IPv4 address, in the kernel's
// order (getifaddrs).
std::vector<NetworkInterface> LocalInterfaces();

// This machine's host name (gethostname), for messages; "" if unknown.
std::string ThisHostName();

// "eth0,eth1" -> {"eth0", "eth1"}; empty names are dropped.
std::vector<std::string> SplitInterfaceList(const std::string& list);

// The first interface of `wanted` (in the list's order) that `have` has.
std::optional<NetworkInterface> FirstListedInterface(
    const std::vector<std::string>& wanted,
    const std::vector<NetworkInterface>& have);

// Whether `address` (dotted IPv4) is in 127.0.0.0/8.
bool IsLoopbackAddress(const std::string& address);

// `have` without its loopback addresses: across machines a
// loopback interface of --network-interfaces does not count, since peers
// could not reach it.
std::vector<NetworkInterface> WithoutLoopback(
    const std::vector<NetworkInterface>& have);

// "lo, eth0" (each name once), or "none".
std::string InterfaceNames(const std::vector<NetworkInterface>& have);

}  // namespace hvd::common
