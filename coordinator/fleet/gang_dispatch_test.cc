// Gangs and replicas through the dispatcher and the round, driven through the coordinator
// in process (coordinator_fixture.h): a spread gang handed out whole, a gang or replicas
// only where every rank or copy has its CPUs, and a spread gang's result judged, its
// reruns run as gangs. The rest of the dispatcher's choices: dispatcher_test.cc.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "common/type_swap.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;  // not benchfleet::Capabilities

const json kCpuSweep = json::parse(
    R"({"name": "cpu", "placement": "any", "matrix": {"model": ["mlp"], "batch_size": [1, 2]}})");

TEST_F(CoordinatorTest, ASpreadGangIsHandedOutWholeAndItsRanksMeetAtRankZerosStore) {
  auto golden = [](const std::string& type) {
    return json::parse(ReadFile(kSchemas / "golden" / (type + ".json")));
  };
  Register("node-a");
  Register("node-b");
  const json spread = json::parse(R"({"name": "s", "placement": "spread",
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 64, "threads": 2,
                 "parallel": {"kind": "data", "world_size": 2}},
      "models": {"mlp": {"layers": [1024, 1024, 10]}}})");
  Submit(spread);
  coordinator_->Tick();
  // Rank 0 first, with no store; rank 1's agent is held for the gang meanwhile.
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  const json rank0 = OffersTo("node-a/1").front();
  EXPECT_EQ(rank0["gang"], json({{"rank", 0}, {"world_size", 2}}));
  EXPECT_TRUE(OffersTo("node-b/1").empty());
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "rendezvous"},
                         {"job_id", rank0["job_id"]},
                         {"attempt", rank0["attempt"]},
                         {"store", "10.0.0.1:41327"}});
  ASSERT_EQ(OffersTo("node-b/1").size(), 1u);
  const json rank1 = OffersTo("node-b/1").front();
  json rank_job = golden("job");
  rank_job.erase("versus");  // a gang's rank is no side of a pair
  ExpectSameKeys(rank_job, rank1, "job");
  EXPECT_EQ(rank1["gang"], json({{"rank", 1}, {"world_size", 2}, {"store", "10.0.0.1:41327"}}));
  EXPECT_EQ(rank1["attempt"], rank0["attempt"]);
  // A rendezvous from anyone but rank 0's agent is ignored.
  sent_.clear();
  FromAgent("node-b/1", {{"v", 1},
                         {"type", "rendezvous"},
                         {"job_id", rank0["job_id"]},
                         {"attempt", rank0["attempt"]},
                         {"store", "10.0.0.2:1"}});
  EXPECT_TRUE(OffersTo("node-a/1").empty());

  auto rank_result = [](const json& offer, int rank, bool ok) {
    json result = GoodResult(offer["spec"]);
    result["distributed"] = {
        {"rank", rank}, {"world_size", 2}, {"address", rank == 0 ? "10.0.0.1" : "10.0.0.2"}};
    if (!ok) result = {{"ok", false}, {"error", "boom"}, {"distributed", {{"rank", rank}}}};
    return json{{"v", 1},
                {"type", "result"},
                {"job_id", offer["job_id"]},
                {"attempt", offer["attempt"]},
                {"result", result}};
  };
  // Rank 1's result waits for rank 0's; then both are acknowledged with the job's one result.
  FromAgent("node-b/1", rank_result(rank1, 1, true));
  EXPECT_EQ(LastTo("node-b/1", "ack"), nullptr);
  FromAgent("node-a/1", rank_result(rank0, 0, true));
  ASSERT_NE(LastTo("node-a/1", "ack"), nullptr);
  ASSERT_NE(LastTo("node-b/1", "ack"), nullptr);
  EXPECT_EQ(LastTo("node-b/1", "ack")->message.body["outcome"], "stored");
  EXPECT_EQ(Query("select count(*) from results"), json::parse("[[1]]"));
  EXPECT_EQ(Query("select rr.rank, h.name, rr.address from result_ranks rr join hosts h "
                  "on h.host_id = rr.host_id order by rr.rank"),
            json::parse(R"([[0, "node-a", "10.0.0.1"], [1, "node-b", "10.0.0.2"]])"));

  // A rank that fails ends the gang: the job's result is that failure, the other rank
  // is stopped.
  Submit(spread);
  coordinator_->Tick();
  const json again0 = OffersTo("node-a/1").back();
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "rendezvous"},
                         {"job_id", again0["job_id"]},
                         {"attempt", again0["attempt"]},
                         {"store", "10.0.0.1:41328"}});
  const json again1 = OffersTo("node-b/1").back();
  ASSERT_EQ(again1["job_id"], again0["job_id"]);
  FromAgent("node-b/1", rank_result(again1, 1, false));
  const Sent* stop = LastTo("node-a/1", "stop");
  ASSERT_NE(stop, nullptr);
  ExpectSameKeys(golden("stop"), stop->message.body, "stop");
  EXPECT_EQ(stop->message.body["job_id"], again0["job_id"]);
  EXPECT_EQ(
      Query("select state, error from jobs where job_id = " + again0["job_id"].dump()),
      json::parse(R"([["failed", "rank 1 of 2 on agent node-b: boom; the gang was stopped"]])"));

  // A gang wider than the fleet waits, and does not hold up the jobs behind it.
  json wide = spread;
  wide["matrix"]["parallel"]["world_size"] = 3;
  wide["matrix"]["batch_size"] = 63;
  sent_.clear();
  Submit(wide);
  Submit(kCpuSweep);
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size() + OffersTo("node-b/1").size(), 2u);
  EXPECT_EQ(Query("select state from jobs where sweep_id = 3"), json::parse(R"([["queued"]])"));
  EXPECT_EQ(Query("select state from jobs where sweep_id = 4"),
            json::parse(R"([["running"], ["running"]])"));
  const json waiting = Request({{"type", "status"}, {"sweep_id", 3}}).body["waiting"];
  ASSERT_EQ(waiting.size(), 1u) << waiting.dump();
  EXPECT_EQ(waiting[0]["matching_agents"], 0);
  EXPECT_NE(
      waiting[0]["reason"].get<std::string>().find("gang of 3 ranks spread over agents and only 2"),
      std::string::npos)
      << waiting.dump();
  EXPECT_EQ(coordinator_->counters().handler_exceptions, 0);
}

TEST_F(CoordinatorTest, AGangOnOneAgentGoesOnlyToAnAgentWithACpuPerThreadOfEveryRank) {
  Register("node-a");  // runs jobs on CPUs 0-1
  json big = Capabilities(0, "node-big");
  big["cpus"] = "0-3";
  const json gang = json::parse(R"({"name": "g", "placement": "any",
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 8, "threads": 2,
                 "parallel": {"kind": "data", "world_size": 2}}})");
  Submit(gang);  // needs 4 CPUs on one agent
  Submit(kCpuSweep);
  coordinator_->Tick();
  // node-a takes a job it can run, not the gang, which waits and says why.
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  EXPECT_FALSE(OffersTo("node-a/1").front()["spec"].contains("parallel"));
  const json waiting = Request({{"type", "status"}, {"sweep_id", 1}}).body["waiting"];
  ASSERT_EQ(waiting.size(), 1u) << waiting.dump();
  EXPECT_EQ(waiting[0]["matching_agents"], 0);
  EXPECT_NE(waiting[0]["reason"].get<std::string>().find("needing 4 CPUs"), std::string::npos)
      << waiting.dump();
  // An agent with four takes it.
  FromAgent("node-big/1", {{"v", 1},
                           {"type", "register"},
                           {"agent", "node-big"},
                           {"tags", json::array()},
                           {"capabilities", big}});
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-big/1").size(), 1u);
  EXPECT_TRUE(OffersTo("node-big/1").front()["spec"].contains("parallel"));
}

TEST_F(CoordinatorTest, ReplicasGoOnlyToAnAgentWithACpuPerThreadOfEveryCopy) {
  Register("node-a");  // runs jobs on CPUs 0-1
  json big = Capabilities(0, "node-big");
  big["cpus"] = "0-3";
  // The same rule as a gang's (JobNeeds::local_cpus, replicas x threads), even in a spread sweep:
  // the copies always share one agent.
  Submit(json::parse(R"({"name": "r", "placement": "spread",
      "matrix": {"model": "mlp", "batch_size": 8, "threads": 2, "replicas": 2}})"));
  Submit(kCpuSweep);
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  EXPECT_FALSE(OffersTo("node-a/1").front()["spec"].contains("replicas"));
  const json waiting = Request({{"type", "status"}, {"sweep_id", 1}}).body["waiting"];
  ASSERT_EQ(waiting.size(), 1u) << waiting.dump();
  EXPECT_NE(waiting[0]["reason"].get<std::string>().find("needing 4 CPUs"), std::string::npos)
      << waiting.dump();
  FromAgent("node-big/1", {{"v", 1},
                           {"type", "register"},
                           {"agent", "node-big"},
                           {"tags", json::array()},
                           {"capabilities", big}});
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-big/1").size(), 1u);
  const json offer = OffersTo("node-big/1").front();
  EXPECT_EQ(offer["spec"]["replicas"], 2);
  // Its result: copy 0's, each copy in `ranks`, the sum in `replicas`.
  json result = GoodResult(offer["spec"]);
  result["throughput_per_s"] = 8000.0;
  result["replicas"] = {{"count", 2},
                        {"aggregate_throughput_per_s", 15000.0},
                        {"overlap_s", 0.5},
                        {"median_ms_min", 1.0},
                        {"median_ms_max", 1.5}};
  result["ranks"] = json::array();
  for (int r = 0; r < 2; ++r) {
    json copy = GoodResult(offer["spec"]);
    copy.erase("samples_ms");
    copy["stats"]["median_ms"] = r == 0 ? 1.0 : 1.5;
    copy["distributed"] = {{"rank", r}};
    copy["replica"] = {{"index", r}, {"count", 2}, {"throughput_per_s", r == 0 ? 8000.0 : 7000.0}};
    result["ranks"].push_back(copy);
  }
  FromAgent("node-big/1", {{"v", 1},
                           {"type", "result"},
                           {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]},
                           {"result", result}});
  ASSERT_NE(LastTo("node-big/1", "ack"), nullptr);
  EXPECT_EQ(LastTo("node-big/1", "ack")->message.body["outcome"], "stored");
  EXPECT_EQ(Query("select rank, median_ms, throughput_per_s from result_ranks order by rank"),
            json::parse("[[0, 1.0, 8000.0], [1, 1.5, 7000.0]]"));
  EXPECT_EQ(Query("select replicas, threads, cores, aggregate_throughput_per_s, replica_median_ms, "
                  "slowest_median_ms from replica_scaling where replicas = 2"),
            json::parse("[[2, 2, 4, 15000.0, 1.25, 1.5]]"));
}

// A spread gang's result is judged as any result: a night twice as slow as its series
// is a candidate, its reruns are gangs again (rank 0 on the agent the job's rank 0 ran
// on, rank 1 on an agent the sweep's select matches, never one it does not), and they
// confirm it.
TEST_F(CoordinatorTest, ASpreadGangsResultIsJudgedAndItsRerunsRunAsGangs) {
  Register("node-a");
  Register("node-b");
  Register("node-c");  // idle, but outside the sweep's select
  const json nightly = json::parse(R"({"name": "dp", "placement": "spread",
      "select": {"name": ["node-a", "node-b"]},
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 16,
                 "parallel": {"kind": "data", "world_size": 2}}})");
  auto rank_result = [](const json& offer, int rank, double median_ms) {
    json result = GoodResult(offer["spec"]);
    result["stats"] = {{"n", 10},
                       {"median_ms", median_ms},
                       {"mean_ms", median_ms},
                       {"min_ms", median_ms * 0.9},
                       {"max_ms", median_ms * 1.2},
                       {"noisy", false}};
    result["samples_ms"] = {median_ms, median_ms};
    result["distributed"] = {
        {"rank", rank}, {"world_size", 2}, {"address", rank == 0 ? "10.0.0.1" : "10.0.0.2"}};
    return json{{"v", 1},
                {"type", "result"},
                {"job_id", offer["job_id"]},
                {"attempt", offer["attempt"]},
                {"result", result}};
  };
  // Hands out the next gang (rank 0 on node-a, rank 1 where the coordinator puts it) and
  // returns both ranks' results of `median_ms`; the job id.
  // Runs the gang handed out last (rank 0 on node-a, rank 1 where the coordinator puts
  // it), both ranks' results of `median_ms`; the job id. Offers are read from what was
  // sent since the last gang ran: a submit or a result hands out the next one at once.
  auto run_gang = [&](double median_ms) -> json {
    coordinator_->Tick();
    const std::vector<json> rank0s = OffersTo("node-a/1");
    if (rank0s.size() != 1u) {
      ADD_FAILURE() << rank0s.size() << " offers to node-a, not one gang";
      return nullptr;
    }
    const json rank0 = rank0s.front();
    sent_.clear();
    FromAgent("node-a/1", {{"v", 1},
                           {"type", "rendezvous"},
                           {"job_id", rank0["job_id"]},
                           {"attempt", rank0["attempt"]},
                           {"store", "10.0.0.1:41327"}});
    EXPECT_TRUE(OffersTo("node-c/1").empty()) << "a rank went to an agent outside the select";
    const std::vector<json> rank1s = OffersTo("node-b/1");
    if (rank1s.size() != 1u) {
      ADD_FAILURE() << "rank 1 of job " << rank0["job_id"] << " was not handed out";
      return nullptr;
    }
    EXPECT_EQ(rank1s.front()["job_id"], rank0["job_id"]);
    sent_.clear();
    FromAgent("node-b/1", rank_result(rank1s.front(), 1, median_ms));
    FromAgent("node-a/1", rank_result(rank0, 0, median_ms));
    EXPECT_NE(LastTo("node-a/1", "ack"), nullptr);
    EXPECT_NE(LastTo("node-b/1", "ack"), nullptr);
    // What the result handed out next (a rerun) stays for the next call; the acks go.
    sent_.erase(std::remove_if(sent_.begin(), sent_.end(),
                               [](const Sent& sent) { return sent.message.type != "job"; }),
                sent_.end());
    return rank0["job_id"];
  };
  for (int night = 0; night < 3; ++night) {
    sent_.clear();
    Submit(nightly);
    ASSERT_FALSE(run_gang(1.0).is_null());
  }
  EXPECT_EQ(Query("select count(*) from regressions"), json::parse("[[0]]"));
  sent_.clear();
  Submit(nightly);
  const json slow = run_gang(2.0);
  ASSERT_FALSE(slow.is_null());
  EXPECT_EQ(Query("select state from regressions where job_id = " + slow.dump()),
            json::parse(R"([["candidate"]])"));
  EXPECT_EQ(Query("select count(*), min(pinned_host), max(world_size), max(spread) from jobs where "
                  "confirms_job_id = " +
                  slow.dump()),
            json::parse(R"([[3, "node-a", 2, 1]])"));
  for (int rerun = 0; rerun < 3; ++rerun)
    ASSERT_FALSE(run_gang(2.0).is_null()) << "rerun " << rerun;
  EXPECT_EQ(Query("select state, direction from regressions where job_id = " + slow.dump()),
            json::parse(R"([["confirmed", "slower"]])"));
  // Every night and rerun counted once as a stored result, none a duplicate.
  EXPECT_EQ(coordinator_->counters().results_stored, 7);
  EXPECT_EQ(coordinator_->counters().duplicate_results, 0);
  EXPECT_EQ(coordinator_->counters().handler_exceptions, 0);
}

}  // namespace
}  // namespace benchfleet
