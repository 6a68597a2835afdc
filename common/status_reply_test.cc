#include "common/status_reply.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"

namespace benchfleet {
namespace {

using nlohmann::json;

TEST(StatusReplyTest, GoldenRoundTrips) { ExpectRoundTrip<StatusReply>("status_reply"); }

TEST(StatusReplyTest, GoldenReadsAsTyped) {
  auto reply = StatusReply::FromJson(Golden("status_reply").body);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->sweeps.size(), 1u);
  const SweepOverview& sweep = reply->sweeps[0];
  EXPECT_EQ(sweep.sweep_id, 3);
  EXPECT_EQ(sweep.jobs.Unfinished(), 6);
  EXPECT_FALSE(sweep.finished_at.has_value());
  EXPECT_EQ(sweep.eta_s.value_or(-1), 42);
  ASSERT_EQ(reply->agents.size(), 2u);
  EXPECT_TRUE(reply->agents[0].Busy());
  ASSERT_TRUE(reply->agents[0].job.has_value());
  EXPECT_EQ(reply->agents[0].job->model.value_or(""), "mlp");
  EXPECT_EQ(reply->agents[0].job->batch_size.value_or(0), 16);
  EXPECT_FALSE(reply->agents[1].Busy());
  EXPECT_EQ(reply->counters.results_stored, 6);
  ASSERT_EQ(reply->waiting.size(), 1u);
  EXPECT_EQ(reply->waiting[0].pinned_host, "");
  EXPECT_EQ(reply->waiting[0].select, json({{"device", "cpu"}}));
  ASSERT_EQ(reply->departed.size(), 1u);
  EXPECT_EQ(reply->departed[0].reason, "went silent for 3000 ms");
}

TEST(StatusReplyTest, ACalibrationJobNamesNoModel) {
  StatusReply reply;
  AgentState agent;
  agent.agent = "node-a";
  agent.job_id = 9;
  agent.job = RunningJobSummary{};
  agent.job->sweep_id = 2;
  agent.job->kind = "calibration";
  reply.agents.push_back(agent);
  const json body = reply.ToJson();
  EXPECT_TRUE(body["agents"][0]["job"]["model"].is_null());
  EXPECT_EQ(body["agents"][0]["state"], "busy");
  auto read = StatusReply::FromJson(body);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ToJson(), body);
}

TEST(StatusReplyTest, NestedValuesAreRefusedNamingTheField) {
  struct Case {
    json::json_pointer at;
    json value;
    std::string error;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/sweeps/0/jobs/done"), -1,
       "status_reply.sweeps[0].jobs.done: must be an integer >= 0, got -1"},
      {json::json_pointer("/sweeps/0/jobs/done"), 20,
       "status_reply.sweeps[0].jobs: more jobs ended than its total"},
      {json::json_pointer("/sweeps/0/state"), "paused",
       "status_reply.sweeps[0].state: must be running, done or cancelled, got \"paused\""},
      {json::json_pointer("/sweeps/0/eta_s"), -4,
       "status_reply.sweeps[0].eta_s: must be a number of seconds >= 0 or null, got -4"},
      {json::json_pointer("/sweeps/0/labels"), json({{"team", 3}}),
       "status_reply.sweeps[0].labels.team: must be a string"},
      {json::json_pointer("/agents/1/job_id"), 4,
       "status_reply.agents[1].job_id: a busy agent names its job and an idle one none"},
      {json::json_pointer("/agents/0/job/batch_size"), 0,
       "status_reply.agents[0].job.batch_size: must be an integer >= 1, got 0"},
      {json::json_pointer("/agents/0/tags"), json::array({1}),
       "status_reply.agents[0].tags: must be an array of strings"},
      {json::json_pointer("/counters/store_errors"), "x",
       "status_reply.counters.store_errors: must be an integer >= 0, got \"x\""},
      {json::json_pointer("/waiting/0/requirement/select"), "cpu",
       "status_reply.waiting[0].requirement.select: must be an object"},
      {json::json_pointer("/departed/0"), "node-c",
       "status_reply.departed[0]: must be an object, got \"node-c\""},
  };
  for (const Case& c : cases) {
    json body = Golden("status_reply").body;
    body[c.at] = c.value;
    EXPECT_EQ(StatusReply::FromJson(body).status().message(), c.error);
  }
  json body = Golden("status_reply").body;
  body["counters"].erase("failed_jobs");
  EXPECT_EQ(StatusReply::FromJson(body).status().message(),
            "status_reply.counters.failed_jobs: missing");
}

TEST(StatusReplyTest, CountersAreNamedInTheProtocolsOrder) {
  CoordinatorCounters counters;
  counters.refused_offers = 5;
  const auto named = counters.Named();
  ASSERT_EQ(named.size(), 13u);
  EXPECT_STREQ(named.front().first, "malformed_messages");
  EXPECT_STREQ(named.back().first, "handler_exceptions");
  auto read = CoordinatorCounters::FromJson(counters.ToJson());
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->refused_offers, 5);
  EXPECT_EQ(read->ToJson(), counters.ToJson());
}

}  // namespace
}  // namespace benchfleet
