// The dispatcher and the round driven through the coordinator in process
// (coordinator_fixture.h): who gets which job, offers lost or refused, gangs and
// replicas, and what a round sends only after its commit.
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

TEST_F(CoordinatorTest, JobsNobodyCanRunDoNotBlockJobsSomebodyCan) {
  Register("cpu-box");
  // 10,000 jobs that need an H100 nobody has registered, then one CPU job.
  json gpu_sweep = {{"name", "h100"},
                    {"placement", "any"},
                    {"select", {{"gpu_model", "H100"}}},
                    {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 10000; ++b) gpu_sweep["matrix"]["batch_size"].push_back(b);
  int64_t blocked = Submit(gpu_sweep);
  ASSERT_GT(blocked, 0);
  TickUntilStored(blocked);
  Submit(json::parse(
      R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 3}})"));
  coordinator_->Tick();
  auto offers = OffersTo("cpu-box/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["spec"]["batch_size"], 3);

  Message status = Request({{"type", "status"}, {"sweep_id", blocked}});
  ASSERT_EQ(status.type, "status_reply");
  ASSERT_EQ(status.body["waiting"].size(), 1u) << status.body.dump();
  EXPECT_EQ(status.body["waiting"][0]["matching_agents"], 0);
  EXPECT_EQ(status.body["waiting"][0]["reason"],
            "10000 jobs wait for an agent matching {gpu_model: H100}; none is registered");
}

TEST_F(CoordinatorTest, CudaJobsGoOnlyToAgentsWithEnoughGpus) {
  Register("cpu-only");
  Register("one-gpu", 1);
  Submit(json::parse(R"({"name": "g", "placement": "any",
                        "matrix": {"model": "mlp", "batch_size": 1, "device": "cuda:1"}})"));
  coordinator_->Tick();
  EXPECT_TRUE(OffersTo("cpu-only/1").empty());
  EXPECT_TRUE(OffersTo("one-gpu/1").empty());
  Register("two-gpus", 2);
  coordinator_->Tick();
  EXPECT_EQ(OffersTo("two-gpus/1").size(), 1u);
  // placement "each" pins only to agents that can run the device; none: refused.
  Message refused = Request(
      {{"type", "submit"}, {"sweep", json::parse(R"({"name": "e", "select": {"name": "cpu-only"},
                                 "matrix": {"model": "mlp", "batch_size": 1, "device": "cuda"}})")}});
  EXPECT_EQ(refused.type, "error");
}

TEST_F(CoordinatorTest, AnOfferToADeadAgentCostsNoAttempt) {
  Register("dead");
  gone_.insert("dead/1");  // killed: the ROUTER no longer knows its peer
  Submit(json::parse(
      R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})"));
  coordinator_->Tick();
  EXPECT_EQ(coordinator_->counters().undelivered_offers, 1);
  Register("alive");
  coordinator_->Tick();
  auto offers = OffersTo("alive/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["attempt"], 1);
  Message status = Request({{"type", "status"}});
  ASSERT_EQ(status.body["agents"].size(), 1u);
  ASSERT_EQ(status.body["departed"].size(), 1u);
  EXPECT_EQ(status.body["departed"][0]["agent"], "dead");
}

TEST_F(CoordinatorTest, ARefusedOfferCostsNoAttemptAndPausesTheAgent) {
  Register("busy");
  Submit(json::parse(
      R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})"));
  coordinator_->Tick();
  json offer = OffersTo("busy/1").at(0);
  for (int i = 0; i < 5; ++i) {
    FromAgent("busy/1", {{"v", 1},
                         {"type", "error"},
                         {"code", "failed_precondition"},
                         {"message", "agent is busy with job 7"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]}});
    coordinator_->Tick();
  }
  EXPECT_EQ(coordinator_->counters().refused_offers, 1);
  EXPECT_EQ(OffersTo("busy/1").size(), 1u);  // paused: not offered again at once
  Register("free");
  coordinator_->Tick();
  auto offers = OffersTo("free/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["attempt"], 1);
}

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
  ExpectSameKeys(golden("job"), rank1, "job");
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

TEST_F(CoordinatorTest, ASearchIsFiledAtTheBatchItFound) {
  Register("node-a");
  Submit(json::parse(R"({"name": "fit", "search": {"max_batch": {"memory_mb": 2048}},
      "matrix": {"model": "cnn"}})"));
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  const json offer = OffersTo("node-a/1").front();
  EXPECT_EQ(offer["spec"]["search"]["max_batch"]["memory_mb"], 2048);
  json result = GoodResult(offer["spec"]);
  result["batch_size"] = 1;  // the echo: where the search started
  result["search"] = {
      {"max_batch", 96},
      {"memory_mb", 2048},
      {"limit", "address_space"},
      {"baseline_mb", 600.0},
      {"limit_mb", 2648.0},
      {"probes", {{{"batch_size", 1}, {"fits", true}}, {{"batch_size", 97}, {"fits", false}}}}};
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", result}});
  ASSERT_NE(LastTo("node-a/1", "ack"), nullptr);
  EXPECT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "stored");
  EXPECT_EQ(Query("select batch_size, max_batch, max_batch_memory_mb from result_summary"),
            json::parse("[[96, 96, 2048]]"));
  EXPECT_EQ(Query("select memory_mb, limit_kind, baseline_mb, max_batch, start_batch, probes from "
                  "max_batch_fit"),
            json::parse(R"([[2048, "address_space", 600.0, 96, 1, 2]])"));
}

json ResultFor(const json& offer) {
  return {{"v", 1},
          {"type", "result"},
          {"job_id", offer["job_id"]},
          {"attempt", offer["attempt"]},
          {"result", GoodResult(offer["spec"])}};
}

TEST_F(CoordinatorTest, ARoundSendsWhatDependsOnItsWritesOnlyAfterItsCommit) {
  Submit(kCpuSweep);  // two jobs, nobody to run them yet
  coordinator_->BeginRound();
  Register("node-a");
  coordinator_->Tick();
  EXPECT_EQ(LastTo("node-a/1", "registered"), nullptr);
  EXPECT_TRUE(OffersTo("node-a/1").empty());
  coordinator_->EndRound();
  ASSERT_NE(LastTo("node-a/1", "registered"), nullptr);
  auto offers = OffersTo("node-a/1");
  ASSERT_EQ(offers.size(), 1u);

  coordinator_->BeginRound();
  FromAgent("node-a/1", ResultFor(offers[0]));
  EXPECT_EQ(LastTo("node-a/1", "ack"), nullptr);
  // Reads are answered within the round (from another connection: nothing committed yet).
  EXPECT_EQ(Query("select count(*) from results"), json::parse("[[0]]"));
  coordinator_->EndRound();
  // The ack, then the next job, both after the same commit.
  ASSERT_GE(sent_.size(), 2u);
  EXPECT_EQ(sent_[sent_.size() - 2].message.type, "ack");
  EXPECT_EQ(sent_[sent_.size() - 2].message.body["outcome"], "stored");
  EXPECT_EQ(sent_.back().message.type, "job");
  EXPECT_EQ(OffersTo("node-a/1").size(), 2u);
  EXPECT_EQ(Query("select count(*) from results"), json::parse("[[1]]"));
}

TEST_F(CoordinatorTest, ARoundWhoseCommitFailsIsUndoneAndAcknowledgesNothing) {
  if (std::string why = MountSmallDisk("size=4m"); !why.empty()) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): " << why;
  }
  StartWithStoreAt(dir_ / "disk" / "results.db");
  Register("node-a");
  Submit(kCpuSweep);
  auto offers = OffersTo("node-a/1");
  ASSERT_EQ(offers.size(), 1u);
  const json first = offers[0];

  // The disk fills to the last byte.
  FillSmallDisk();
  sent_.clear();
  coordinator_->BeginRound();
  FromAgent("node-a/1", ResultFor(first));
  Register("node-b");
  coordinator_->HandleClient(
      {"client",
       json{{"v", 1}, {"type", "submit"}, {"request_id", "full"}, {"sweep", kCpuSweep}}.dump()});
  coordinator_->Tick();
  coordinator_->EndRound();

  EXPECT_EQ(LastTo("node-a/1", "ack"), nullptr);  // the result stays in node-a's spool
  EXPECT_TRUE(OffersTo("node-a/1").empty());
  EXPECT_EQ(LastTo("node-b/1", "registered"), nullptr);
  const Sent* refused = LastTo("client", "error");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->message.body["request_id"], "full");
  EXPECT_NE(refused->message.body["message"].get<std::string>().find("full"), std::string::npos)
      << refused->message.body.dump();
  EXPECT_EQ(coordinator_->counters().results_stored, 0);
  EXPECT_EQ(coordinator_->counters().store_errors, 1);

  // Space comes back. node-b was never kept: told to register again.
  FreeSmallDisk();
  FromAgent("node-b/1", {{"v", 1}, {"type", "heartbeat"}});
  const Sent* unknown = LastTo("node-b/1", "error");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->message.body["code"], "not_found");
  // node-a sends its result again: stored once, and the next job is its first attempt
  // (the hand-out of the failed round cost none).
  FromAgent("node-a/1", ResultFor(first));
  const Sent* ack = LastTo("node-a/1", "ack");
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->message.body["outcome"], "stored");
  offers = OffersTo("node-a/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_NE(offers[0]["job_id"], first["job_id"]);
  EXPECT_EQ(offers[0]["attempt"], 1);
  EXPECT_EQ(Query("select count(*) from results"), json::parse("[[1]]"));
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[1]]"));
  EXPECT_EQ(coordinator_->counters().results_stored, 1);
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

// Under placement "any" a job placed by a thread_placement goes only to an agent whose
// CPUs can give it: an idle agent of one core is passed over for one of two.
TEST_F(CoordinatorTest, AThreadPlacedJobGoesOnlyToAnAgentWhoseCpusCanPlaceIt) {
  auto register_with = [&](const std::string& name, int64_t cores) {
    json capabilities = Capabilities(0, name);
    capabilities["cpu_shape"] = {
        {"cpus", cores}, {"cores", cores}, {"threads_per_core", 1}, {"largest_node", cores}};
    FromAgent(name + "/1", {{"v", 1},
                            {"type", "register"},
                            {"agent", name},
                            {"tags", json::array()},
                            {"capabilities", capabilities}});
  };
  register_with("node-a-small", 1);
  register_with("node-b-large", 2);
  Submit(json::parse(R"({"name": "placed", "placement": "any",
      "matrix": {"model": "mlp", "batch_size": [1, 2], "threads": 2, "thread_placement": ["spread", null]}})"));
  coordinator_->Tick();
  // Two jobs spread over 2 cores, two by the default: the small agent takes only the latter.
  ASSERT_FALSE(OffersTo("node-a-small/1").empty());
  for (const json& offer : OffersTo("node-a-small/1")) {
    EXPECT_FALSE(offer["spec"].contains("thread_placement")) << offer.dump();
  }
  ASSERT_FALSE(OffersTo("node-b-large/1").empty());
  EXPECT_EQ(Query("select count(distinct requirement_id) from jobs"), json::parse("[[2]]"));
  EXPECT_EQ(Query("select count(*) from requirements where json_extract(select_json, "
                  "'$.thread_placement.policy') = "
                  "'spread' and json_extract(select_json, '$.thread_placement.threads') = 2"),
            json::parse("[[1]]"));
}

}  // namespace
}  // namespace benchfleet
