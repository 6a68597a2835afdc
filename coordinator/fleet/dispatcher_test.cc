// The dispatcher and the round driven through the coordinator in process
// (coordinator_fixture.h): who gets which job, offers lost or refused, a search's
// result, and what a round sends only after its commit. Gangs and replicas:
// gang_dispatch_test.cc.
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
