// Where hosts are and where the driver listens.
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "job/launch_config.h"

namespace hvd::launcher {

// True when `host` resolves to a loopback address or to an address of one
// of this machine's interfaces: such a host is started with a local exec,
// any other over ssh. So localhost, 127.0.0.1 and 127.0.0.2 are distinct
// hosts on this machine.
bool IsLocalHost(const std::string& host);

// The address the rendezvous server binds to, which workers are told to
// connect to. Bind only where needed: 127.0.0.1 when every host is local;
// otherwise the IPv4 address of the first interface of
// `network_interfaces` (--network-interfaces, "eth0,eth1") this machine
// has, if given, else the local address that routes to the first remote
// host.
common::Result<std::string> ChooseServerAddress(
    const std::vector<HostSlots>& hosts, const std::string& network_interfaces);

}  // namespace hvd::launcher
