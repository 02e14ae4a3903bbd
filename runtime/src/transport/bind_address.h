// Where a worker listens: the address its Gloo device and its notification
// server bind to, which its peers and the driver connect to.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/network_interfaces.h"
#include "hvd/common/status.h"

namespace hvd::runtime {

// The address to bind, decided from `interfaces` (HOROVOD_GLOO_IFACE: one
// name or a comma-separated list, horovodrun's --network-interfaces) or,
// when that is empty, from the route to the rendezvous server:
// - with interfaces, the IPv4 address of the first listed one this host
//   has (hosts of one job may name their interfaces differently); none of
//   them here is an error naming the list and the interfaces there are;
// - without, `route_source` (the local address this host reaches the
//   rendezvous server from): the host's name may resolve to 127.0.1.1, as
//   Debian writes /etc/hosts, which no other host can reach.
// Pure: the caller looks up `local` and `route_source`.
// The interfaces of `local` a listed interface may be: all of them when the
// rendezvous server is on loopback (the job is on this machine alone), else
// those without a loopback address, which peers on other machines could not
// reach (`--network-interfaces lo,eth0` then means eth0).
std::vector<common::NetworkInterface> UsableInterfaces(
    const std::vector<common::NetworkInterface>& local,
    const std::string& rendezvous_addr);

common::Result<std::string> ChooseBindAddress(
    const std::string& interfaces,
    const std::vector<common::NetworkInterface>& local,
    const std::string& route_source, const std::string& hostname);

// The local address that routes to `address`; empty if there is no route.
// A connected UDP socket sends nothing; connecting it only picks the route.
std::string RouteSource(const std::string& address);

}  // namespace hvd::runtime
