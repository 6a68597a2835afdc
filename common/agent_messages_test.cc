// Every agent <-> coordinator message, both ways, against its golden example: what the
// sender's struct writes is the golden message, and what the receiver's struct reads
// of the golden message writes it back unchanged.
#include "common/agent_messages.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"

namespace benchfleet {
namespace {

TEST(AgentMessagesTest, EveryMessageWritesItsGoldenExampleAndReadsItBack) {
  ExpectRoundTrip<RegisterRequest>("register");
  ExpectRoundTrip<Heartbeat>("heartbeat");
  ExpectRoundTrip<LeaveNotice>("leave");
  ExpectRoundTrip<LeftReply>("left");
  ExpectRoundTrip<RendezvousReport>("rendezvous");
  ExpectRoundTrip<ErrorReport>("error");
  ExpectRoundTrip<RegisteredReply>("registered");
  ExpectRoundTrip<JobOffer>("job");
  ExpectRoundTrip<StopOrder>("stop");
  ExpectRoundTrip<ResultAck>("ack");
}

TEST(AgentMessagesTest, AResultIsMadeAsTheGoldenOneAndItsEnvelopeRead) {
  const Message golden = Golden("result");
  auto report = ResultReport::FromJson(golden.body);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->job.job_id, golden.body["job_id"]);
  ASSERT_NE(report->result, nullptr);
  EXPECT_EQ(*report->result, golden.body["result"]);
  EXPECT_EQ(ResultReport::Make(report->job, *report->result).body, golden.body);
}

TEST(AgentMessagesTest, TheCoordinatorsHeartbeatCarriesNothingAndAnIdleAgentsSaysSo) {
  const json coordinator = Heartbeat{std::nullopt, /*from_agent=*/false}.ToJson();
  EXPECT_EQ(coordinator, json({{"v", 1}, {"type", "heartbeat"}}));
  const json idle = Heartbeat{}.ToJson();
  EXPECT_EQ(idle, json({{"v", 1}, {"type", "heartbeat"}, {"running", nullptr}}));
  auto read = Heartbeat::FromJson(idle);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->running.has_value());
}

// The receiver's checks, which Decode (top-level types only) cannot make.
TEST(AgentMessagesTest, ValuesOutOfRangeAreRefusedNamingTheField) {
  struct Case {
    std::string type;
    json change;  // fields replacing the golden body's
    std::string error;
  };
  const std::vector<Case> cases = {
      {"registered",
       {{"heartbeat_ms", 0}},
       "registered.heartbeat_ms: must be an integer in [1, 86400000], got 0"},
      {"registered",
       {{"liveness", -3}},
       "registered.liveness: must be an integer in [1, 1000], got -3"},
      {"job", {{"job_id", 0}}, "job.job_id: must be an integer >= 1, got 0"},
      {"job", {{"timeout_s", -1}}, "job.timeout_s: must be a finite number >= 0, got -1"},
      {"job",
       {{"gang", {{"rank", 2}, {"world_size", 2}, {"store", "h:1"}}}},
       "job.gang.rank: must be an integer in [0, 1], got 2"},
      {"job",
       {{"gang", {{"rank", 1}, {"world_size", 2}}}},
       "job.gang.store: rank 1 needs rank 0's store"},
      {"stop", {{"attempt", -1}}, "stop.attempt: must be an integer in [1, 2147483647], got -1"},
      {"ack",
       {{"outcome", "maybe"}},
       "ack.outcome: must be stored, duplicate, stale or rejected, got \"maybe\""},
      {"rendezvous",
       {{"store", "10.0.0.1:0"}},
       "rendezvous.store: must be \"HOST:PORT\" with a port in [1, 65535]"},
      {"heartbeat", {{"running", {{"job_id", 4}}}}, "heartbeat.running.attempt: missing"},
      {"register", {{"running", {{"job_id", 4}}}}, "register.running.attempt: missing"},
      {"register", {{"instance", "ABC"}}, "register.instance: must be 16 lowercase hex digits"},
      {"leave", {{"running", "x"}}, "leave.running: must be {job_id, attempt}, got \"x\""},
      {"leave", {{"reason", std::string(70000, 'r')}}, "leave.reason: "},
  };
  for (const Case& c : cases) {
    Message message = Golden(c.type);
    for (const auto& [key, value] : c.change.items()) message.body[key] = value;
    Status status;
    if (c.type == "registered") status = RegisteredReply::FromJson(message.body).status();
    if (c.type == "job") status = JobOffer::FromJson(message.body).status();
    if (c.type == "stop") status = StopOrder::FromJson(message.body).status();
    if (c.type == "ack") status = ResultAck::FromJson(message.body).status();
    if (c.type == "rendezvous") status = RendezvousReport::FromJson(message.body).status();
    if (c.type == "heartbeat") status = Heartbeat::FromJson(message.body).status();
    if (c.type == "register") status = RegisterRequest::FromJson(message.body).status();
    if (c.type == "leave") status = LeaveNotice::FromJson(message.body).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.type << " " << c.change.dump();
    EXPECT_EQ(status.message().substr(0, c.error.size()), c.error) << c.change.dump();
  }
}

}  // namespace
}  // namespace benchfleet
