// An agent's `leave` (schemas/protocol.md): it is gone at once, not a liveness window
// later; an offer that crossed the leave goes back without costing an attempt, and only
// the job it says it stopped loses its attempt.
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using testing_fixture::CoordinatorTest;
using testing_fixture::Sent;

constexpr const char* kOneJob =
    R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})";

class AgentLeaveTest : public CoordinatorTest {
 protected:
  void Leave(const std::string& peer, const std::string& reason, const json& running = nullptr) {
    FromAgent(peer, {{"v", 1}, {"type", "leave"}, {"reason", reason}, {"running", running}});
  }
  json Status() { return Request({{"type", "status"}}).body; }
};

TEST_F(AgentLeaveTest, AnIdleAgentLeavesAtOnceAndAnOfferThatCrossedItCostsNoAttempt) {
  Register("batch");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("batch/1").at(0);
  EXPECT_EQ(offer["attempt"], 1);

  // The agent decided to go before the offer reached it: it never ran the job.
  Leave("batch/1", "idle for 30 s (--exit-when-idle)");
  coordinator_->Tick();
  EXPECT_NE(LastTo("batch/1", "left"), nullptr) << "the leave was not answered";
  json status = Status();
  EXPECT_TRUE(status["agents"].empty()) << status.dump();
  ASSERT_EQ(status["departed"].size(), 1u);
  EXPECT_EQ(status["departed"][0]["agent"], "batch");
  EXPECT_EQ(status["departed"][0]["reason"], "left: idle for 30 s (--exit-when-idle)");
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 0);
  EXPECT_EQ(status["sweeps"][0]["jobs"]["queued"], 1);

  // The next agent gets it as its first attempt.
  Register("next");
  coordinator_->Tick();
  const auto offers = OffersTo("next/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["job_id"], offer["job_id"]);
  EXPECT_EQ(offers[0]["attempt"], 1);
}

TEST_F(AgentLeaveTest, TheJobAStoppedAgentWasRunningLosesItsAttempt) {
  Register("stopped");
  Submit(json::parse(kOneJob));
  coordinator_->Tick();
  const json offer = OffersTo("stopped/1").at(0);
  Leave("stopped/1", "stopped by a signal",
        {{"job_id", offer["job_id"]}, {"attempt", offer["attempt"]}});
  coordinator_->Tick();
  EXPECT_TRUE(Status()["agents"].empty());
  EXPECT_EQ(coordinator_->counters().requeued_jobs, 1);
  Register("next");
  coordinator_->Tick();
  const auto offers = OffersTo("next/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["attempt"], 2);
}

// An agent taken for gone before its leave was read (its connection closed first) is
// answered all the same: it waits for the answer.
TEST_F(AgentLeaveTest, ALeaveFromAnAgentAlreadyGoneIsAnswered) {
  Leave("stranger/7", "idle for 30 s (--exit-when-idle)");
  coordinator_->Tick();
  EXPECT_NE(LastTo("stranger/7", "left"), nullptr);
  EXPECT_EQ(LastTo("stranger/7", "error"), nullptr);
}

// A leave is parsed like any message: a malformed one is answered with an error naming
// the field, and the agent stays.
TEST_F(AgentLeaveTest, AMalformedLeaveIsRefusedAndTheAgentStays) {
  Register("odd");
  FromAgent("odd/1", {{"v", 1}, {"type", "leave"}, {"reason", "bye"}, {"running", 5}});
  const Sent* error = LastTo("odd/1", "error");
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->message.body["message"], "leave.running: must be {job_id, attempt}, got 5");
  EXPECT_EQ(Status()["agents"].size(), 1u);
}

}  // namespace
}  // namespace benchfleet
