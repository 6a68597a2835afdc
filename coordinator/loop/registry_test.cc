#include "coordinator/loop/registry.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

Agent MakeAgent(const std::string& name, const std::string& machine, MonoTime seen) {
  Agent a;
  a.routing_id = name + "/1";
  a.machine_id = machine;
  a.description.name = name;
  a.last_seen = seen;
  return a;
}

TEST(RegistryTest, SilentAgentsAreFound) {
  AgentRegistry registry;
  MonoTime t0 = MonoTime{} + Millis(100000);
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0 + Millis(2500)));
  auto silent = registry.SilentAgents(t0 + Millis(3001), Millis(3000));
  ASSERT_EQ(silent.size(), 1u);
  EXPECT_EQ(registry.FindByRoutingId(silent[0])->description.name, "a");
}

// The heartbeat walk: slices in order, wrapping round, each agent once per lap, and an
// agent that left (the cursor's own) does not stop the walk.
TEST(RegistryTest, RoutingIdsAfterWalksTheFleetInSlicesAndWrapsRound) {
  AgentRegistry registry;
  MonoTime t0 = MonoTime{} + Millis(100000);
  for (const char* name : {"a", "b", "c", "d", "e"}) registry.Upsert(MakeAgent(name, name, t0));
  using Ids = std::vector<std::string>;
  EXPECT_EQ(registry.RoutingIdsAfter("", 2), (Ids{"a/1", "b/1"}));
  EXPECT_EQ(registry.RoutingIdsAfter("b/1", 2), (Ids{"c/1", "d/1"}));
  EXPECT_EQ(registry.RoutingIdsAfter("d/1", 2), (Ids{"e/1", "a/1"}));
  // More than the fleet: each agent once, never the cursor twice.
  EXPECT_EQ(registry.RoutingIdsAfter("c/1", 9), (Ids{"d/1", "e/1", "a/1", "b/1", "c/1"}));
  registry.Remove("c/1");
  EXPECT_EQ(registry.RoutingIdsAfter("c/1", 2), (Ids{"d/1", "e/1"}));
  EXPECT_EQ(registry.RoutingIdsAfter("c/1", 0), Ids{});
}

}  // namespace
}  // namespace benchfleet
