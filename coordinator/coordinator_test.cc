// The coordinator's handlers driven in process: a real store (SQLite file), the real
// query thread, messages in and out through an outbox instead of sockets. What a peer
// can send is tried here exhaustively; tests/ covers the same over real sockets.
#include "coordinator/coordinator.h"

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
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;  // not benchfleet::Capabilities

const json kCpuSweep = json::parse(
    R"({"name": "cpu", "placement": "any", "matrix": {"model": ["mlp"], "batch_size": [1, 2]}})");

// Every golden message with every field at every depth swapped for a value of every
// other JSON type, sent as an agent and as a client: nothing escapes a handler.
TEST_F(CoordinatorTest, TypeSwapSweepOverEveryGoldenMessage) {
  Register("node-a");
  Submit(kCpuSweep);
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  const json offer = OffersTo("node-a/1").front();
  size_t tried = 0;
  for (const std::string& type : AllMessageTypes()) {
    json golden = json::parse(ReadFile(kSchemas / "golden" / (type + ".json")));
    // Aim the agent's messages at the job it holds, so they reach the deepest checks.
    if (golden.contains("job_id")) golden["job_id"] = offer["job_id"];
    if (golden.contains("attempt")) golden["attempt"] = offer["attempt"];
    if (type == "result") {
      golden["result"]["job_id"] = offer["job_id"];
      golden["result"]["attempt"] = offer["attempt"];
    }
    if (type == "register") golden["agent"] = "node-a";
    tried += ForEachTypeSwap(golden, [&](const json& variant) {
      const std::string frame = variant.dump();
      coordinator_->HandleAgent({"node-a/1", frame});
      coordinator_->HandleClient({"client", frame});
      coordinator_->DeliverReadReplies(Millis(0));
      coordinator_->Tick();
    });
  }
  std::cout << "FIGURE type-swap messages tried: " << tried
            << " (each sent as agent and as client)\n";
  EXPECT_GT(tried, 1000u);
  EXPECT_EQ(coordinator_->counters().handler_exceptions, 0);
  EXPECT_GT(coordinator_->counters().malformed_messages, 0);
  Message status = Request({{"type", "status"}});
  EXPECT_EQ(status.type, "status_reply");
}

TEST_F(CoordinatorTest, ForgedOrEmptyResultsAreRejectedAndNothingIsStored) {
  Register("node-a");
  // Enough jobs for every case: a rejected attempt is lost, and a job fails after three.
  Submit(json::parse(R"({"name": "cpu", "placement": "any",
                         "matrix": {"model": ["mlp"], "batch_size": [1, 2, 3, 4, 5, 6]}})"));
  coordinator_->Tick();
  json offer = OffersTo("node-a/1").at(0);
  auto deliver = [&](const json& result) {
    FromAgent("node-a/1", {{"v", 1},
                           {"type", "result"},
                           {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]},
                           {"result", result}});
    const Sent* ack = LastTo("node-a/1", "ack");
    return ack ? ack->message.body : json();
  };
  // Each case makes its result for the job on offer (a rejected attempt is lost and
  // the job offered again).
  struct Case {
    std::function<json(const json& offer)> result;
    const char* names;
  };
  auto with = [](const char* key, json value) {
    return [key, value](const json& offer) {
      json result = GoodResult(offer["spec"]);
      result[key] = value;
      return result;
    };
  };
  std::vector<Case> cases = {
      {[](const json&) {
         return json{{"ok", true}};
       },
       "result.stats.n"},
      {[](const json&) {
         return json{{"ok", 1}};
       },
       "result.ok"},
      {with("model", "cnn"), "result.model"},
      {with("batch_size", 999), "result.batch_size"},
      {[](const json& offer) {
         json result = GoodResult(offer["spec"]);
         result["job_id"] = offer["job_id"].get<int64_t>() + 100;
         return result;
       },
       "result.job_id"},
      // A gang's per-rank entries are checked to their depth, like the result itself.
      {with("ranks", json::array({json{{"ok", true}}})), "result.ranks[0].distributed.rank"},
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", "0"}}}}}),
       "result.ranks[0].distributed.rank"},
      {with("ranks",
            {{{"ok", true}, {"distributed", {{"rank", 0}}}, {"stats", {{"median_ms", "fast"}}}}}),
       "result.ranks[0].stats.median_ms"},
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", 1}}}},
                      {{"ok", true}, {"distributed", {{"rank", 1}}}}}),
       "result.ranks[1].distributed.rank"},
      {with("ranks", "all"), "result.ranks"},
      // Well formed, but this job runs in one process.
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", 0}}}}}),
       "result.ranks: 1 ranks for job"}};
  for (const Case& c : cases) {
    sent_.clear();
    json ack = deliver(c.result(offer));
    EXPECT_EQ(ack.value("outcome", ""), "rejected") << ack.dump();
    EXPECT_NE(ack.value("reason", "").find(c.names), std::string::npos) << ack.dump();
    const Sent* error = LastTo("node-a/1", "error");
    ASSERT_NE(error, nullptr);
    EXPECT_NE(error->message.body["message"].get<std::string>().find(c.names), std::string::npos);
    coordinator_->Tick();
    auto offers = OffersTo("node-a/1");
    if (!offers.empty()) offer = offers.back();  // the job came back as a new attempt
  }
  EXPECT_EQ(Query("select count(*) from results"), json::parse("[[0]]"));
  EXPECT_EQ(Query("select count(*) from result_ranks"), json::parse("[[0]]"));
  EXPECT_EQ(coordinator_->counters().rejected_results, 11);
  EXPECT_EQ(coordinator_->counters().handler_exceptions, 0);
}

TEST_F(CoordinatorTest, StatusSaysWhichJobRunsWhereAndWhenTheSweepShouldEnd) {
  Register("node-a");
  const int64_t id =
      Submit(json::parse(R"({"name": "s", "placement": "any", "labels": {"commit": "abc123"},
      "matrix": {"model": "mlp", "batch_size": [1, 2, 3, 4], "threads": 2}})"));
  auto finish_next = [&] {
    coordinator_->Tick();
    const json offer = LastTo("node-a/1", "job")->message.body;
    FromAgent("node-a/1", {{"v", 1},
                           {"type", "result"},
                           {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]},
                           {"result", GoodResult(offer["spec"])}});
  };
  coordinator_->Tick();
  Message status = Request({{"type", "status"}});
  const json agent = status.body["agents"][0];
  ASSERT_EQ(agent["state"], "busy") << status.body.dump();
  EXPECT_EQ(agent["job"]["sweep_id"], id);
  EXPECT_EQ(agent["job"]["model"], "mlp");
  EXPECT_EQ(agent["job"]["batch_size"], 1);
  EXPECT_EQ(agent["job"]["threads"], 2);
  EXPECT_EQ(agent["job"]["device"], "cpu");
  EXPECT_TRUE(agent["job"]["started_at"].is_string());
  EXPECT_EQ(status.body["sweeps"][0]["labels"], json({{"commit", "abc123"}}));
  EXPECT_TRUE(status.body["sweeps"][0]["eta_s"].is_null()) << "no result yet: no rate to go by";
  finish_next();
  finish_next();
  status = Request({{"type", "status"}});
  const json eta = status.body["sweeps"][0]["eta_s"];
  ASSERT_TRUE(eta.is_number()) << status.body.dump();
  EXPECT_GE(eta.get<double>(), 0);
  finish_next();
  finish_next();
  status = Request({{"type", "status"}});
  EXPECT_EQ(status.body["sweeps"][0]["state"], "done");
  EXPECT_TRUE(status.body["sweeps"][0]["eta_s"].is_null());
  EXPECT_TRUE(status.body["agents"][0]["job"].is_null());
}

TEST_F(CoordinatorTest, AHeartbeatMustNameItsJobProperly) {
  Register("node-a");
  sent_.clear();
  FromAgent("node-a/1", {{"v", 1}, {"type", "heartbeat"}, {"running", 5}});
  const Sent* error = LastTo("node-a/1", "error");
  ASSERT_NE(error, nullptr);
  EXPECT_NE(error->message.body["message"].get<std::string>().find("heartbeat.running"),
            std::string::npos);
}

TEST_F(CoordinatorTest, ARequestRefusedAsMalformedStillGetsItsRequestIdBack) {
  // Fields of the wrong type or missing: Decode refuses them before any handler runs.
  const std::vector<json> requests = {
      {{"v", 1}, {"type", "status"}, {"request_id", "wrong-type"}, {"sweep_id", "seven"}},
      {{"v", 1}, {"type", "query"}, {"request_id", json{{"n", 7}}}},
      {{"v", 1}, {"type", "submit"}, {"request_id", 42}, {"sweep", "not an object"}},
  };
  for (const json& request : requests) {
    coordinator_->HandleClient({"client", request.dump()});
    const Sent* reply = AnswerTo(request["request_id"]);
    ASSERT_NE(reply, nullptr) << request.dump();
    EXPECT_EQ(reply->message.type, "error") << request.dump();
    EXPECT_EQ(reply->message.body["code"], "invalid_argument") << request.dump();
  }
  // No object, nothing to echo: still an error, without a request_id.
  const size_t before = sent_.size();
  coordinator_->HandleClient({"client", "[1, 2]"});
  ASSERT_EQ(sent_.size(), before + 1);
  EXPECT_EQ(sent_.back().message.type, "error");
  EXPECT_FALSE(sent_.back().message.body.contains("request_id"));
}

TEST_F(CoordinatorTest, ResultsLimitAndMultipleStatementsAreRefused) {
  for (int limit : {0, -1, 20000}) {
    Message reply = Request({{"type", "results"}, {"limit", limit}});
    EXPECT_EQ(reply.type, "error") << limit;
  }
  Message two = Request({{"type", "query"}, {"sql", "select 1; delete from hosts"}});
  ASSERT_EQ(two.type, "error");
  EXPECT_NE(two.body["message"].get<std::string>().find("only one SQL statement"),
            std::string::npos);
}

TEST_F(CoordinatorTest, CalibrationIsSharedByTheAgentsOfAMachineAndMatchesTheDtype) {
  auto start = [&](const std::string& name) {
    FromAgent(name + "/1", {{"v", 1},
                            {"type", "register"},
                            {"agent", name},
                            {"tags", json::array()},
                            {"calibrate", true},
                            {"capabilities", Capabilities(0, "box")}});
  };
  start("a1");
  start("a2");  // same machine: the calibration queued for a1 serves it too
  EXPECT_EQ(Query("select count(*) from jobs where kind = 'calibration'"), json::parse("[[1]]"));
  coordinator_->Tick();
  json calibration_job = LastTo("a1/1", "job")->message.body;
  json calibration = {{"ok", true},
                      {"kind", "calibration"},
                      {"calibration",
                       {{"cpu",
                         {{"gemm_gflops_all", 200.0},
                          {"gemm_threads_all", 2},
                          {"gemm_gflops_1", 110.0},
                          {"gemm_bf16_gflops_all", 400.0},
                          {"gemm_bf16_gflops_1", 220.0}}},
                        {"gpus", json::array()}}}};
  FromAgent("a1/1", {{"v", 1},
                     {"type", "result"},
                     {"job_id", calibration_job["job_id"]},
                     {"attempt", calibration_job["attempt"]},
                     {"result", calibration}});
  start("a3");  // started after the calibration: nothing new is queued
  EXPECT_EQ(Query("select count(*) from jobs where kind = 'calibration'"), json::parse("[[1]]"));

  // A bf16 result on a2 is read against the machine's bf16 peak.
  Submit(json::parse(R"({"name": "b", "placement": "each", "select": {"name": "a2"},
                         "matrix": {"model": "mlp", "batch_size": 1, "dtype": "bf16", "threads": 2}})"));
  coordinator_->Tick();
  json offer = LastTo("a2/1", "job")->message.body;
  json result = GoodResult(offer["spec"]);
  result["gflops"] = 100.0;
  FromAgent("a2/1", {{"v", 1},
                     {"type", "result"},
                     {"job_id", offer["job_id"]},
                     {"attempt", offer["attempt"]},
                     {"result", result}});
  EXPECT_EQ(Query("select peak_gflops, fraction_of_peak from result_summary"),
            json::parse("[[400.0, 0.25]]"));
}

TEST_F(CoordinatorTest, RepliesHaveTheShapeOfTheirGoldenExamples) {
  auto golden = [](const std::string& type) {
    return json::parse(ReadFile(kSchemas / "golden" / (type + ".json")));
  };
  Register("node-a");
  ExpectSameKeys(golden("registered"), LastTo("node-a/1", "registered")->message.body,
                 "registered");
  json gpu_sweep = json::parse(R"({"name": "g", "placement": "any", "select": {"device": "cpu"},
      "matrix": {"model": "mlp", "batch_size": [1, 2, 3], "device": "cuda"}})");
  json cpu_sweep = kCpuSweep;
  cpu_sweep["models"] = {{"mlp", {{"layers", {16, 4}}}}};
  Message submitted = Request({{"type", "submit"}, {"sweep", gpu_sweep}, {"submission_id", "s1"}});
  ExpectSameKeys(golden("submitted"), submitted.body, "submitted");
  Submit(cpu_sweep);
  coordinator_->Tick();
  // A plain job's offer: the golden example is a gang's rank (ASpreadGang... checks it
  // whole), so its gang fields are left out here.
  json plain_job = golden("job");
  plain_job.erase("gang");
  plain_job.erase("versus");
  plain_job["spec"].erase("parallel");
  plain_job["spec"].erase("placement");
  ExpectSameKeys(plain_job, LastTo("node-a/1", "job")->message.body, "job");
  json offer = LastTo("node-a/1", "job")->message.body;
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", {{"ok", true}}}});
  ExpectSameKeys(golden("ack"), LastTo("node-a/1", "ack")->message.body, "ack");
  coordinator_->Tick();  // the rejected attempt is lost; the job is offered again
  offer = LastTo("node-a/1", "job")->message.body;
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", GoodResult(offer["spec"])}});
  EXPECT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "stored");
  Submit(kCpuSweep);
  Register("node-c");
  gone_.insert("node-c/1");
  coordinator_->Tick();  // node-c is offered a job, cannot be reached and departs
  coordinator_->Tick();  // node-a gets the next job: status shows it busy
  Message status = Request({{"type", "status"}});
  ASSERT_FALSE(status.body["waiting"].empty()) << status.body.dump();
  ASSERT_FALSE(status.body["departed"].empty()) << status.body.dump();
  ExpectSameKeys(golden("status_reply"), status.body, "status_reply");
  ExpectSameKeys(golden("rows"), Request({{"type", "results"}, {"limit", 5}}).body, "rows");
  ExpectSameKeys(golden("cancelled"), Request({{"type", "cancel"}, {"sweep_id", 1}}).body,
                 "cancelled");
}

TEST_F(CoordinatorTest, AServerScenarioIsARowOfTheServingView) {
  Register("node-a");
  Submit(json::parse(R"({"name": "serve", "matrix": {"model": "mlp", "batch_size": 8,
      "scenario": {"kind": "server", "qps": 1000, "slo_p99_ms": 5}}})"));
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size(), 1u);
  const json offer = OffersTo("node-a/1").front();
  EXPECT_EQ(offer["spec"]["scenario"]["qps"], 1000);
  json result = GoodResult(offer["spec"]);
  result["scenario"] = "server";
  result["serving"] = {
      {"target_qps", 4000.0},    {"achieved_qps", 3990.0}, {"latency_p50_ms", 1.0},
      {"latency_p90_ms", 2.0},   {"latency_p99_ms", 4.5},  {"queries", 40000},
      {"batches", 10000},        {"mean_batch", 4.0},      {"max_batch", 8},
      {"max_wait_ms", 1.0},      {"slo_p99_ms", 5.0},      {"max_qps_within_slo", 4000.0},
      {"probes", json::array()}, {"valid", true}};
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", result}});
  ASSERT_NE(LastTo("node-a/1", "ack"), nullptr);
  EXPECT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "stored");
  EXPECT_EQ(Query("select scenario, max_batch, target_qps, p99_ms, mean_batch, slo_p99_ms, "
                  "max_qps_within_slo from serving"),
            json::parse(R"([["server", 8, 4000.0, 4.5, 4.0, 5.0, 4000.0]])"));
}

TEST_F(CoordinatorTest, PruneDropsOldSamplesInStepsAndAnswersWhenDone) {
  Register("node-a");
  Submit(kCpuSweep);
  for (int job = 0; job < 2; ++job) {
    coordinator_->Tick();
    json offer = LastTo("node-a/1", "job")->message.body;
    FromAgent("node-a/1", {{"v", 1},
                           {"type", "result"},
                           {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]},
                           {"result", GoodResult(offer["spec"])}});
    ASSERT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "stored");
  }
  ASSERT_EQ(Query("select count(*) as n from result_samples")[0][0], 2);
  // Bad ages are refused at the edge.
  for (const json& age : {json(-1), json(1e300)}) {
    Message refused = Request({{"type", "prune"}, {"samples_older_than_s", age}});
    EXPECT_EQ(refused.type, "error") << age;
  }
  // Nothing is a day old: nothing goes. The reply comes from the loop's timer work.
  auto prune = [&](double older_than_s, const std::string& id) {
    coordinator_->HandleClient({"client", json({{"v", 1},
                                                {"type", "prune"},
                                                {"request_id", id},
                                                {"samples_older_than_s", older_than_s}})
                                              .dump()});
  };
  auto reply_to = [&](const std::string& id) -> const Sent* {
    for (auto it = sent_.rbegin(); it != sent_.rend(); ++it) {
      if (it->side == Side::kClients && it->message.body.value("request_id", json()) == id)
        return &*it;
    }
    return nullptr;
  };
  prune(86400, "p1");
  EXPECT_EQ(reply_to("p1"), nullptr);
  prune(0, "p2");  // one at a time
  ASSERT_NE(reply_to("p2"), nullptr);
  EXPECT_EQ(reply_to("p2")->message.body["code"], "unavailable");
  for (int i = 0; i < 100 && reply_to("p1") == nullptr; ++i) coordinator_->Tick();
  ASSERT_NE(reply_to("p1"), nullptr);
  EXPECT_EQ(reply_to("p1")->message.type, "pruned") << reply_to("p1")->message.body.dump();
  EXPECT_EQ(reply_to("p1")->message.body["results_pruned"], 0);
  EXPECT_EQ(Query("select count(*) as n from samples")[0][0], 4);
  // Everything older than now goes; results and their statistics stay.
  prune(0, "p3");
  for (int i = 0; i < 100 && reply_to("p3") == nullptr; ++i) coordinator_->Tick();
  ASSERT_NE(reply_to("p3"), nullptr);
  const json& pruned = reply_to("p3")->message.body;
  EXPECT_EQ(reply_to("p3")->message.type, "pruned") << pruned.dump();
  EXPECT_EQ(pruned["results_pruned"], 2);
  EXPECT_LE(pruned["bytes_after"].get<int64_t>(), pruned["bytes_before"].get<int64_t>());
  EXPECT_EQ(Query("select count(*) as n from samples")[0][0], 0);
  EXPECT_EQ(Query("select count(*) as n from result_summary where median_ms = 1.0")[0][0], 2);
  EXPECT_EQ(coordinator_->counters().store_errors, 0);
}

// `results --sweep 999`: an error naming the sweep, not an empty table that reads as
// "no results yet".
TEST_F(CoordinatorTest, ResultsOfASweepThatDoesNotExistAreAnError) {
  Message reply = Request({{"type", "results"}, {"sweep_id", 999}});
  EXPECT_EQ(reply.type, "error") << reply.body.dump();
  EXPECT_EQ(reply.body.value("code", ""), "not_found");
  EXPECT_NE(reply.body.value("message", "").find("999"), std::string::npos);
  const int64_t sweep = Submit(kCpuSweep);
  EXPECT_EQ(Request({{"type", "results"}, {"sweep_id", sweep}}).type,
            "rows");  // none yet: no error
}

}  // namespace
}  // namespace benchfleet
