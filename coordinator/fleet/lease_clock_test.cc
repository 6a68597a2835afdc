// Leases, liveness and back-offs run on the coordinator's monotonic clock, which the
// test moves (ManualMonotonicClock): each expiry is driven to the millisecond, with no
// waiting and no race with a busy machine.
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using testing_fixture::CoordinatorTest;

constexpr const char* kOneJob =
    R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})";

class LeaseClockTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    manual_time_ = true;
    heartbeat_ms_ = 1000;  // with the default liveness of 3: silent for 3 s is gone
    StartWithStoreAt(dir_ / "results.db");
  }
  void Heartbeat(const std::string& peer, const json& offer) {
    FromAgent(peer, {{"v", 1},
                     {"type", "heartbeat"},
                     {"running", {{"job_id", offer["job_id"]}, {"attempt", offer["attempt"]}}}});
  }
  // The agents `status` lists, by name.
  std::set<std::string> Agents() {
    std::set<std::string> names;
    const Message status = Request({{"type", "status"}});  // named: the loop reads into it
    for (const json& agent : status.body["agents"]) {
      names.insert(agent["agent"].get<std::string>());
    }
    return names;
  }
};

TEST_F(LeaseClockTest, ASilentAgentLosesItsLeaseAtTheEndOfTheLivenessWindowNotBefore) {
  Register("quiet");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("quiet/1").at(0);
  EXPECT_EQ(offer["attempt"], 1);

  clock_.Advance(Millis(2999));  // one millisecond short of three heartbeat intervals
  coordinator_->Tick();
  EXPECT_EQ(Agents(), std::set<std::string>{"quiet"});
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 0);

  // Silent agents are looked for every 50 ms of the loop, not at every message.
  clock_.Advance(Millis(60));
  coordinator_->Tick();
  EXPECT_TRUE(Agents().empty());
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 1);

  // The job goes to the next agent as its second attempt.
  Register("next");
  coordinator_->Tick();
  const auto offers = OffersTo("next/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["job_id"], offer["job_id"]);
  EXPECT_EQ(offers[0]["attempt"], 2);
}

TEST_F(LeaseClockTest, HeartbeatsNamingTheJobKeepTheAgentAndItsLeaseForAsLongAsTheyCome) {
  Register("steady");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("steady/1").at(0);
  for (int second = 0; second < 20; ++second) {
    clock_.Advance(Millis(1000));
    Heartbeat("steady/1", offer);
    coordinator_->Tick();
  }
  EXPECT_EQ(Agents(), std::set<std::string>{"steady"});
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 0);
  EXPECT_EQ(OffersTo("steady/1").size(), 1u);

  // Then it falls silent: gone one liveness window after its last heartbeat.
  clock_.Advance(Millis(3001));
  coordinator_->Tick();
  EXPECT_TRUE(Agents().empty());
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 1);
}

TEST_F(LeaseClockTest, ARefusingAgentIsOfferedTheJobAgainOnlyOnceItsPauseIsOver) {
  Register("busy");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("busy/1").at(0);
  FromAgent("busy/1", {{"v", 1},
                       {"type", "error"},
                       {"code", "failed_precondition"},
                       {"message", "agent is busy with job 7"},
                       {"job_id", offer["job_id"]},
                       {"attempt", offer["attempt"]}});
  // Paused: however often the loop runs, no offer while the clock stands still.
  for (int i = 0; i < 10; ++i) coordinator_->Tick();
  EXPECT_EQ(OffersTo("busy/1").size(), 1u);
  // Heartbeats keep it registered; the pause (well under a minute) ends.
  for (int second = 0; second < 60 && OffersTo("busy/1").size() == 1; ++second) {
    clock_.Advance(Millis(1000));
    FromAgent("busy/1", {{"v", 1}, {"type", "heartbeat"}, {"running", nullptr}});
    coordinator_->Tick();
  }
  const auto offers = OffersTo("busy/1");
  ASSERT_EQ(offers.size(), 2u);
  EXPECT_EQ(offers[1]["job_id"], offer["job_id"]);
  EXPECT_EQ(offers[1]["attempt"], 1);  // a refused offer cost no attempt
  EXPECT_EQ(coordinator_->counters().refused_offers, 1);
}

// An attempt whose lease ended while the disk was full cannot be requeued then; its
// lease is not put back (the agent is not shown busy with it, and nothing renews it), and
// the requeue is tried again until the store takes it: the job then goes out again.
TEST_F(CoordinatorTest, ALostAttemptTheStoreCouldNotRequeueIsRequeuedOnceItCan) {
  if (std::string why = MountSmallDisk("size=4m"); !why.empty()) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): " << why;
  }
  manual_time_ = true;
  heartbeat_ms_ = 1000;
  StartWithStoreAt(dir_ / "disk" / "results.db");
  Register("quiet");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("quiet/1").at(0);

  FillSmallDisk();
  clock_.Advance(Millis(3060));  // quiet is gone, its lease with it
  coordinator_->Tick();
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 0);
  EXPECT_GE(coordinator_->counters().store_errors, 1);
  clock_.Advance(Millis(1000));  // tried again, and again it cannot be written
  coordinator_->Tick();
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 0);

  FreeSmallDisk();
  clock_.Advance(Millis(1000));
  coordinator_->Tick();
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 1);
  Register("next");
  coordinator_->Tick();
  const auto offers = OffersTo("next/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["job_id"], offer["job_id"]);
  EXPECT_EQ(offers[0]["attempt"], 2);
}

}  // namespace
}  // namespace benchfleet
