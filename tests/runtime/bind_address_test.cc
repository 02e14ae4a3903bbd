// Where a worker listens (runtime/src/transport/bind_address.h).
#include "transport/bind_address.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

const std::vector<common::NetworkInterface> kHost = {
    {"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}, {"ib0", "192.168.7.5"}};

TEST(BindAddressTest, WithoutInterfacesTheRouteToTheServerWins) {
  // The host's name may resolve to 127.0.1.1 (Debian); the route does not.
  auto bind = ChooseBindAddress("", kHost, "10.0.0.5", "node1");
  ASSERT_TRUE(bind.ok()) << bind.status().ToString();
  EXPECT_EQ(*bind, "10.0.0.5");
}

TEST(BindAddressTest, NoRouteIsAnErrorThatNamesTheHostAndTheWayOut) {
  auto bind = ChooseBindAddress("", kHost, "", "node1");
  ASSERT_FALSE(bind.ok());
  EXPECT_NE(bind.status().message().find("node1"), std::string::npos);
  EXPECT_NE(bind.status().message().find("--network-interfaces"),
            std::string::npos);
}

TEST(BindAddressTest, TheFirstListedInterfaceThisHostHasIsUsed) {
  auto one = ChooseBindAddress("ib0", kHost, "10.0.0.5", "node1");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, "192.168.7.5");
  // Hosts of one job may name their interfaces differently: eth9 is
  // another host's, so this one takes the next in the list.
  auto list = ChooseBindAddress("eth9,ib0,eth0", kHost, "", "node1");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, "192.168.7.5");
}

TEST(BindAddressTest, NoListedInterfaceHereNamesTheListAndWhatTheHostHas) {
  auto bind = ChooseBindAddress("eth9,eth8", kHost, "10.0.0.5", "node1");
  ASSERT_FALSE(bind.ok());
  const std::string message = bind.status().message();
  EXPECT_NE(message.find("node1"), std::string::npos);
  EXPECT_NE(message.find("eth9,eth8"), std::string::npos);
  EXPECT_NE(message.find("lo, eth0, ib0"), std::string::npos);
}

TEST(BindAddressTest, LoopbackCountsOnlyWhenTheJobIsOnThisMachine) {
  // hvdrun --network-interfaces lo,eth0: one machine, lo; several, eth0.
  auto alone = ChooseBindAddress(
      "lo,eth0", UsableInterfaces(kHost, "127.0.0.1"), "", "node1");
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, "127.0.0.1");
  auto across = ChooseBindAddress(
      "lo,eth0", UsableInterfaces(kHost, "10.0.0.1"), "", "node1");
  ASSERT_TRUE(across.ok());
  EXPECT_EQ(*across, "10.0.0.5");
  EXPECT_FALSE(
      ChooseBindAddress("lo", UsableInterfaces(kHost, "10.0.0.1"), "", "node1")
          .ok());
}

TEST(BindAddressTest, RouteSourceOfLoopbackIsLoopback) {
  EXPECT_EQ(RouteSource("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(RouteSource("not an address"), "");
}

}  // namespace
}  // namespace hvd::runtime
