#include "coordinator/registry.h"

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

Lease MakeLease(int64_t job, const std::string& agent, MonoTime renewed, MonoTime deadline) {
  Lease l;
  l.job_id = job;
  l.attempt = 1;
  l.agent = agent;
  l.renewed_at = renewed;
  l.hard_deadline = deadline;
  return l;
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

TEST(RegistryTest, LeasesExpireWhenNotRenewedOrPastDeadline) {
  AgentRegistry registry;
  MonoTime t0 = MonoTime{} + Millis(100000);
  registry.AddLease(MakeLease(1, "a", t0, t0 + Millis(60000)));
  registry.AddLease(MakeLease(2, "b", t0 + Millis(2900), t0 + Millis(3000)));
  registry.AddLease(MakeLease(3, "c", t0 + Millis(2900), t0 + Millis(60000)));
  auto expired = registry.TakeExpiredLeases(t0 + Millis(3100), Millis(3000));
  ASSERT_EQ(expired.size(), 2u);  // 1: not renewed; 2: past its hard deadline
  EXPECT_EQ(expired[0].job_id, 1);
  EXPECT_EQ(expired[1].job_id, 2);
  EXPECT_NE(registry.FindLease(3), nullptr);
}

TEST(RegistryTest, AgentsOnOneMachineTakeTurns) {
  AgentRegistry registry;
  MonoTime t0 = MonoNow();
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  registry.AddLease(MakeLease(1, "a", t0, t0 + Millis(1000)));
  EXPECT_TRUE(registry.HasLease("a"));
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("a")));
  EXPECT_TRUE(registry.MachineBusy(*registry.FindByName("b")));
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("c")));
  auto taken = registry.TakeLeasesOf("a");
  EXPECT_EQ(taken.size(), 1u);
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("b")));
}

}  // namespace
}  // namespace benchfleet
