// --network-interfaces lists and which interface of a host they select.
#include "hvd/common/network_interfaces.h"

#include <gtest/gtest.h>

namespace hvd::common {
namespace {

TEST(NetworkInterfacesTest, SplitsHorovodrunsCommaList) {
  EXPECT_EQ(SplitInterfaceList("eth0,eth1"),
            (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(SplitInterfaceList("eth0"), (std::vector<std::string>{"eth0"}));
  EXPECT_TRUE(SplitInterfaceList("").empty());
}

TEST(NetworkInterfacesTest, TheListsOrderDecidesNotTheHosts) {
  std::vector<NetworkInterface> have = {
      {"lo", "127.0.0.1"}, {"eth0", "10.0.0.2"}, {"ib0", "10.1.0.2"}};
  auto chosen = FirstListedInterface({"nosuch0", "ib0", "eth0"}, have);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(*chosen, (NetworkInterface{"ib0", "10.1.0.2"}));
  EXPECT_FALSE(FirstListedInterface({"nosuch0"}, have));
  EXPECT_FALSE(FirstListedInterface({}, have));
}

TEST(NetworkInterfacesTest, NamesEachInterfaceOnce) {
  EXPECT_EQ(
      InterfaceNames(
          {{"lo", "127.0.0.1"}, {"eth0", "10.0.0.2"}, {"eth0", "10.0.0.3"}}),
      "lo, eth0");
  EXPECT_EQ(InterfaceNames({}), "none");
}

TEST(NetworkInterfacesTest, AcrossMachinesLoopbackDoesNotCount) {
  const std::vector<NetworkInterface> have = {
      {"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}, {"lo", "127.0.1.1"}};
  EXPECT_EQ(WithoutLoopback(have),
            (std::vector<NetworkInterface>{{"eth0", "10.0.0.5"}}));
  EXPECT_EQ(FirstListedInterface({"lo", "eth0"}, WithoutLoopback(have))->name,
            "eth0");
}

TEST(NetworkInterfacesTest, ThisMachineHasLoopback) {
  std::vector<NetworkInterface> here = LocalInterfaces();
  bool loopback = false;
  for (const NetworkInterface& it : here) {
    loopback |= it.address == "127.0.0.1";
  }
  EXPECT_TRUE(loopback) << InterfaceNames(here);
}

}  // namespace
}  // namespace hvd::common
