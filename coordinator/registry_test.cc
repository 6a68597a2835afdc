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
  EXPECT_TRUE(registry.LeasedJobOf("a").has_value());
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("a")));
  EXPECT_TRUE(registry.MachineBusy(*registry.FindByName("b")));
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("c")));
  auto taken = registry.TakeLeasesOf("a");
  EXPECT_EQ(taken.size(), 1u);
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("b")));
}

TEST(RegistryTest, IndexesFollowRenamesRemovalsAndReplacedLeases) {
  AgentRegistry registry;
  MonoTime t0 = MonoNow();
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  // The same connection registers under another name and machine.
  Agent renamed = MakeAgent("a2", "m2", t0);
  renamed.routing_id = "a/1";
  registry.Upsert(renamed);
  EXPECT_EQ(registry.FindByName("a"), nullptr);
  ASSERT_NE(registry.FindByName("a2"), nullptr);
  EXPECT_EQ(registry.size(), 2u);
  registry.AddLease(MakeLease(1, "a2", t0, t0 + Millis(1000)));
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("b")));  // a2 is on m2 now
  // A job handed out again (new attempt, other agent) replaces its lease.
  registry.AddLease(MakeLease(1, "b", t0, t0 + Millis(1000)));
  EXPECT_FALSE(registry.LeasedJobOf("a2").has_value());
  EXPECT_EQ(registry.LeasedJobOf("b"), 1);
  registry.RemoveLease(1);
  EXPECT_FALSE(registry.LeasedJobOf("b").has_value());
  EXPECT_EQ(registry.LeasedJobOf("b"), std::nullopt);
  registry.Remove("b/1");
  EXPECT_EQ(registry.FindByName("b"), nullptr);
  EXPECT_EQ(registry.TakeLeasesOf("b").size(), 0u);
}

TEST(RegistryTest, OfferCandidatesAreAgentsThatMayTakeAJob) {
  AgentRegistry registry;
  MonoTime t0 = MonoNow();
  using Ids = std::vector<std::string>;
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"a/1", "b/1", "c/1"}));  // registered
  // The dispatcher found b and c nothing to run; a got a job.
  registry.NoOfferFor("b/1");
  registry.NoOfferFor("c/1");
  registry.AddLease(MakeLease(7, "a", t0, t0 + Millis(1000)));
  EXPECT_TRUE(registry.OfferCandidates().empty());
  // a's job ends: a and the other agent of its machine may take one; c still has nothing.
  registry.RemoveLease(7);
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"a/1", "b/1"}));
  registry.NoOfferFor("a/1");
  registry.NoOfferFor("b/1");
  // Jobs were queued: everyone may take one.
  registry.MayAllTakeOffers();
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"a/1", "b/1", "c/1"}));
  // A lease that expires or whose agent is dropped frees the machine too.
  registry.NoOfferFor("a/1");
  registry.NoOfferFor("b/1");
  registry.NoOfferFor("c/1");
  registry.AddLease(MakeLease(8, "c", t0, t0 + Millis(1000)));
  EXPECT_EQ(registry.TakeExpiredLeases(t0 + Millis(5000), Millis(3000)).size(), 1u);
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"c/1"}));
  registry.Remove("c/1");
  EXPECT_TRUE(registry.OfferCandidates().empty());
}

TEST(RegistryTest, LookupsAnswerFromTheIndexesAcrossAFleet) {
  // 2,000 agents, two per machine, the first of each pair holding a lease: every
  // lookup the dispatcher makes gives the answer for that agent (the time these take at
  // fleet scale is bench_fleet_load's to measure, docs/performance.md).
  AgentRegistry registry;
  MonoTime t0 = MonoNow();
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "agent-" + std::to_string(i);
    registry.Upsert(MakeAgent(name, "m" + std::to_string(i / 2), t0));
    if (i % 2 == 0) registry.AddLease(MakeLease(i, name, t0, t0 + Millis(1000)));
  }
  // Nothing has been dispatched yet: the agents without a lease of their own are
  // candidates (the dispatcher finds out their machine is busy).
  EXPECT_EQ(registry.OfferCandidates().size(), 1000u);
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "agent-" + std::to_string(i);
    const Agent* agent = registry.FindByName(name);
    ASSERT_NE(agent, nullptr) << name;
    EXPECT_EQ(agent->routing_id, name + "/1");
    EXPECT_EQ(registry.FindByRoutingId(name + "/1"), agent);
    const bool holder = i % 2 == 0;
    EXPECT_EQ(registry.LeasedJobOf(name).has_value(), holder) << name;
    EXPECT_EQ(registry.MachineBusy(*agent), !holder) << name;  // its peer holds one
    EXPECT_EQ(registry.LeasedJobOf(name), holder ? std::optional<int64_t>(i) : std::nullopt);
    registry.NoOfferFor(agent->routing_id);
  }
  EXPECT_TRUE(registry.OfferCandidates().empty());
  // One lease ends: exactly that machine's two agents may take an offer.
  registry.RemoveLease(1000);
  EXPECT_EQ(registry.OfferCandidates(), (std::vector<std::string>{"agent-1000/1", "agent-1001/1"}));
}

TEST(RegistryTest, DroppedAgentFreesTheOtherAgentsOfItsMachine) {
  // An agent dropped while it still holds a lease (the caller takes the lease after)
  // no longer keeps its machine busy: its peer becomes an offer candidate at once, not
  // at the dispatcher's next full refresh.
  AgentRegistry registry;
  MonoTime t0 = MonoNow();
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  registry.AddLease(MakeLease(1, "a", t0, t0 + Millis(1000)));
  for (const char* id : {"a/1", "b/1", "c/1"}) registry.NoOfferFor(id);
  EXPECT_TRUE(registry.MachineBusy(*registry.FindByName("b")));
  registry.Remove("a/1");
  EXPECT_FALSE(registry.MachineBusy(*registry.FindByName("b")));
  EXPECT_EQ(registry.OfferCandidates(), (std::vector<std::string>{"b/1"}));
  EXPECT_EQ(registry.TakeLeasesOf("a").size(), 1u);
}

TEST(RegistryTest, ARolledBackJournalPutsEveryLeaseBackAsItWas) {
  AgentRegistry registry;
  MonoTime t0 = MonoTime{} + Millis(100000);
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m2", t0));
  registry.AddLease(MakeLease(1, "a", t0, t0 + Millis(60000)));
  registry.AddLease(MakeLease(2, "b", t0, t0 + Millis(60000)));

  registry.BeginJournal();
  registry.RemoveLease(1);                                     // a result came
  registry.AddLease(MakeLease(3, "a", t0, t0 + Millis(60000)));  // a's next job
  Lease replaced = MakeLease(2, "b", t0, t0 + Millis(60000));
  replaced.attempt = 2;
  registry.AddLease(replaced);                                 // replaces b's lease
  for (const Lease& taken : registry.TakeLeasesOf("b")) EXPECT_EQ(taken.attempt, 2);
  EXPECT_EQ(registry.leases().size(), 1u);
  registry.RollBackJournal();

  ASSERT_EQ(registry.leases().size(), 2u);
  ASSERT_NE(registry.FindLease(1), nullptr);
  EXPECT_EQ(registry.FindLease(1)->agent, "a");
  ASSERT_NE(registry.FindLease(2), nullptr);
  EXPECT_EQ(registry.FindLease(2)->attempt, 1);
  EXPECT_EQ(registry.FindLease(3), nullptr);
  EXPECT_EQ(registry.LeasedJobOf("a"), 1);
  EXPECT_EQ(registry.LeasedJobOf("b"), 2);

  // A journal that ended keeps its changes, and nothing is recorded after it.
  registry.BeginJournal();
  registry.RemoveLease(1);
  registry.EndJournal();
  registry.RemoveLease(2);
  registry.RollBackJournal();
  EXPECT_TRUE(registry.leases().empty());
}

}  // namespace
}  // namespace benchfleet
