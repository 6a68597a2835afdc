#include "coordinator/loop/lease_table.h"

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

// A lease of attempt 1 renewed at `renewed`, due by `deadline`.
void Add(LeaseTable& leases, int64_t job, const std::string& agent, MonoTime renewed,
         MonoTime deadline) {
  leases.Grant(job, 1, agent, {}, renewed, std::chrono::duration_cast<Millis>(deadline - renewed),
               Millis(0));
}

// One deadline formula for every lease: what the job may run plus the liveness window;
// only a holder's heartbeat for that attempt renews it; an offer sent late restarts it.
TEST(LeaseTableTest, AGrantedLeaseLivesWhileAHolderRenewsItAndEndsAtItsDeadline) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  const MonoTime t0 = MonoTime{} + Millis(100000);
  const Millis window(1500);
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m2", t0));
  registry.Upsert(MakeAgent("c", "m3", t0));
  // A gang spread over a (rank 0) and b; its job may run 10 s.
  const Lease gang = leases.Grant(7, 2, "a", {"b"}, t0, Millis(10000), window);
  EXPECT_EQ(gang.hard_deadline, t0 + Millis(11500));
  EXPECT_EQ(leases.LeasedJobOf("b"), 7);
  EXPECT_TRUE(registry.OfferCandidates() == std::vector<std::string>{"c/1"});
  EXPECT_FALSE(leases.Renew(7, "c", 2, t0 + Millis(1000)));  // not a holder
  EXPECT_FALSE(leases.Renew(7, "b", 1, t0 + Millis(1000)));  // an earlier attempt
  EXPECT_TRUE(leases.Renew(7, "b", 2, t0 + Millis(1000)));   // rank 1's agent
  EXPECT_TRUE(leases.Expire(t0 + Millis(2400), window).empty());
  // The offer left 200 ms after the grant: its deadline moves on by as much.
  leases.Restart(7, t0 + Millis(1200));
  EXPECT_EQ(leases.Find(7)->hard_deadline, t0 + Millis(11700));
  for (int s = 1; s <= 10; ++s) EXPECT_TRUE(leases.Renew(7, "a", 2, t0 + Millis(1200 + 1000 * s)));
  EXPECT_TRUE(leases.Expire(t0 + Millis(11700), window).empty());
  const std::vector<Lease> ended = leases.Expire(t0 + Millis(11701), window);  // past its deadline
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].ranks, std::vector<std::string>{"b"});
  EXPECT_EQ(leases.size(), 0u);
  EXPECT_EQ(leases.LeasedJobOf("b"), std::nullopt);
  // Both machines may take offers again; a result already on its way gets the window.
  EXPECT_EQ(registry.OfferCandidates(), (std::vector<std::string>{"a/1", "b/1", "c/1"}));
  EXPECT_EQ(leases.Grant(8, 1, "c", {}, t0, Millis(0), window).hard_deadline, t0 + window);
  // A gone agent's leases, rank or rank 0, end with it; a release says why and returns it.
  leases.Grant(9, 1, "a", {"b"}, t0, Millis(10000), window);
  EXPECT_EQ(leases.ReleaseAllOf("b", "agent b went silent").size(), 1u);
  EXPECT_EQ(leases.Find(9), nullptr);
  ASSERT_TRUE(leases.Release(8, "its result came").has_value());
  EXPECT_FALSE(leases.Release(8, "its result came").has_value());
}

// An agent whose connection closed may be reconnecting: only the leases it shares with
// other agents (a spread gang, which they would keep renewing) end at once; its own wait
// for their renewal window, and live on if it names them again.
TEST(LeaseTableTest, AnUnreachableAgentLosesItsSharedLeasesAtOnceAndItsOwnOnlyUnrenewed) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  const MonoTime t0 = MonoTime{} + Millis(100000);
  const Millis window(1500);
  for (const char* name : {"a", "b"}) registry.Upsert(MakeAgent(name, name, t0));
  leases.Grant(1, 1, "a", {}, t0, Millis(60000), window);
  leases.Grant(2, 1, "b", {"a"}, t0, Millis(60000), window);
  const std::vector<Lease> shared = leases.ReleaseSharedOf("a", "agent a is unreachable");
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].job_id, 2);
  ASSERT_NE(leases.Find(1), nullptr);
  EXPECT_TRUE(leases.Renew(1, "a", 1, t0 + Millis(1000)));  // it registered again, naming it
  EXPECT_TRUE(leases.Expire(t0 + Millis(2400), window).empty());
  EXPECT_EQ(leases.Expire(t0 + Millis(2600), window).size(), 1u);  // never named again
}

TEST(LeaseTableTest, LeasesExpireWhenNotRenewedOrPastDeadline) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoTime{} + Millis(100000);
  Add(leases, 1, "a", t0, t0 + Millis(60000));
  Add(leases, 2, "b", t0 + Millis(2900), t0 + Millis(3000));
  Add(leases, 3, "c", t0 + Millis(2900), t0 + Millis(60000));
  auto expired = leases.Expire(t0 + Millis(3100), Millis(3000));
  ASSERT_EQ(expired.size(), 2u);  // 1: not renewed; 2: past its hard deadline
  EXPECT_EQ(expired[0].job_id, 1);
  EXPECT_EQ(expired[1].job_id, 2);
  EXPECT_NE(leases.Find(3), nullptr);
}

TEST(LeaseTableTest, AgentsOnOneMachineTakeTurns) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoNow();
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  Add(leases, 1, "a", t0, t0 + Millis(1000));
  EXPECT_TRUE(leases.LeasedJobOf("a").has_value());
  EXPECT_FALSE(leases.MachineBusy(*registry.FindByName("a")));
  EXPECT_TRUE(leases.MachineBusy(*registry.FindByName("b")));
  EXPECT_FALSE(leases.MachineBusy(*registry.FindByName("c")));
  auto taken = leases.ReleaseAllOf("a", "agent gone");
  EXPECT_EQ(taken.size(), 1u);
  EXPECT_FALSE(leases.MachineBusy(*registry.FindByName("b")));
}

TEST(LeaseTableTest, IndexesFollowRenamesRemovalsAndReplacedLeases) {
  AgentRegistry registry;
  LeaseTable leases(registry);
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
  Add(leases, 1, "a2", t0, t0 + Millis(1000));
  EXPECT_FALSE(leases.MachineBusy(*registry.FindByName("b")));  // a2 is on m2 now
  // A job handed out again (new attempt, other agent) replaces its lease.
  Add(leases, 1, "b", t0, t0 + Millis(1000));
  EXPECT_FALSE(leases.LeasedJobOf("a2").has_value());
  EXPECT_EQ(leases.LeasedJobOf("b"), 1);
  leases.Release(1, "its result came");
  EXPECT_FALSE(leases.LeasedJobOf("b").has_value());
  EXPECT_EQ(leases.LeasedJobOf("b"), std::nullopt);
  registry.Remove("b/1");
  EXPECT_EQ(registry.FindByName("b"), nullptr);
  EXPECT_EQ(leases.ReleaseAllOf("b", "agent gone").size(), 0u);
}

TEST(LeaseTableTest, OfferCandidatesAreAgentsThatMayTakeAJob) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoNow();
  using Ids = std::vector<std::string>;
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"a/1", "b/1", "c/1"}));  // registered
  // The dispatcher found b and c nothing to run; a got a job.
  registry.NoOfferFor("b/1");
  registry.NoOfferFor("c/1");
  Add(leases, 7, "a", t0, t0 + Millis(1000));
  EXPECT_TRUE(registry.OfferCandidates().empty());
  // a's job ends: a and the other agent of its machine may take one; c still has nothing.
  leases.Release(7, "its result came");
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
  Add(leases, 8, "c", t0, t0 + Millis(1000));
  EXPECT_EQ(leases.Expire(t0 + Millis(5000), Millis(3000)).size(), 1u);
  EXPECT_EQ(registry.OfferCandidates(), (Ids{"c/1"}));
  registry.Remove("c/1");
  EXPECT_TRUE(registry.OfferCandidates().empty());
}

TEST(LeaseTableTest, LookupsAnswerFromTheIndexesAcrossAFleet) {
  // 2,000 agents, two per machine, the first of each pair holding a lease: every
  // lookup the dispatcher makes gives the answer for that agent (the time these take at
  // fleet scale is bench_fleet_load's to measure, docs/performance.md).
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoNow();
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "agent-" + std::to_string(i);
    registry.Upsert(MakeAgent(name, "m" + std::to_string(i / 2), t0));
    if (i % 2 == 0) Add(leases, i, name, t0, t0 + Millis(1000));
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
    EXPECT_EQ(leases.LeasedJobOf(name).has_value(), holder) << name;
    EXPECT_EQ(leases.MachineBusy(*agent), !holder) << name;  // its peer holds one
    EXPECT_EQ(leases.LeasedJobOf(name), holder ? std::optional<int64_t>(i) : std::nullopt);
    registry.NoOfferFor(agent->routing_id);
  }
  EXPECT_TRUE(registry.OfferCandidates().empty());
  // One lease ends: exactly that machine's two agents may take an offer.
  leases.Release(1000, "its result came");
  EXPECT_EQ(registry.OfferCandidates(), (std::vector<std::string>{"agent-1000/1", "agent-1001/1"}));
}

TEST(LeaseTableTest, DroppedAgentFreesTheOtherAgentsOfItsMachine) {
  // An agent dropped while it still holds a lease keeps its machine busy as long as the
  // lease lasts (its connection closed: it may come back for it); when the lease ends,
  // its peer becomes an offer candidate at once, not at the dispatcher's next full
  // refresh, though no registered agent held it.
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoNow();
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m1", t0));
  registry.Upsert(MakeAgent("c", "m2", t0));
  Add(leases, 1, "a", t0, t0 + Millis(1000));
  for (const char* id : {"a/1", "b/1", "c/1"}) registry.NoOfferFor(id);
  EXPECT_TRUE(leases.MachineBusy(*registry.FindByName("b")));
  registry.Remove("a/1");
  EXPECT_TRUE(leases.MachineBusy(*registry.FindByName("b")));
  for (const char* id : {"b/1", "c/1"}) registry.NoOfferFor(id);
  EXPECT_EQ(leases.ReleaseAllOf("a", "agent gone").size(), 1u);
  EXPECT_FALSE(leases.MachineBusy(*registry.FindByName("b")));
  EXPECT_EQ(registry.OfferCandidates(), (std::vector<std::string>{"b/1"}));
}

TEST(LeaseTableTest, ARolledBackJournalPutsEveryLeaseBackAsItWas) {
  AgentRegistry registry;
  LeaseTable leases(registry);
  MonoTime t0 = MonoTime{} + Millis(100000);
  registry.Upsert(MakeAgent("a", "m1", t0));
  registry.Upsert(MakeAgent("b", "m2", t0));
  Add(leases, 1, "a", t0, t0 + Millis(60000));
  Add(leases, 2, "b", t0, t0 + Millis(60000));

  leases.BeginJournal();
  leases.Release(1, "its result came");                       // a result came
  Add(leases, 3, "a", t0, t0 + Millis(60000));                // a's next job
  leases.Grant(2, 2, "b", {}, t0, Millis(60000), Millis(0));  // replaces b's lease
  for (const Lease& taken : leases.ReleaseAllOf("b", "agent gone")) EXPECT_EQ(taken.attempt, 2);
  EXPECT_EQ(leases.all().size(), 1u);
  leases.RollBackJournal();

  ASSERT_EQ(leases.all().size(), 2u);
  ASSERT_NE(leases.Find(1), nullptr);
  EXPECT_EQ(leases.Find(1)->agent, "a");
  ASSERT_NE(leases.Find(2), nullptr);
  EXPECT_EQ(leases.Find(2)->attempt, 1);
  EXPECT_EQ(leases.Find(3), nullptr);
  EXPECT_EQ(leases.LeasedJobOf("a"), 1);
  EXPECT_EQ(leases.LeasedJobOf("b"), 2);

  // A journal that ended keeps its changes, and nothing is recorded after it.
  leases.BeginJournal();
  leases.Release(1, "its result came");
  leases.EndJournal();
  leases.Release(2, "its result came");
  leases.RollBackJournal();
  EXPECT_TRUE(leases.all().empty());
}

}  // namespace
}  // namespace benchfleet
