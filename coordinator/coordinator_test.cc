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
  std::cout << "FIGURE type-swap messages tried: " << tried << " (each sent as agent and as client)\n";
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
    FromAgent("node-a/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]}, {"result", result}});
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
      {[](const json&) { return json{{"ok", true}}; }, "result.stats.n"},
      {[](const json&) { return json{{"ok", 1}}; }, "result.ok"},
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
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", "0"}}}}}), "result.ranks[0].distributed.rank"},
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", 0}}}, {"stats", {{"median_ms", "fast"}}}}}),
       "result.ranks[0].stats.median_ms"},
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", 1}}}}, {{"ok", true}, {"distributed", {{"rank", 1}}}}}),
       "result.ranks[1].distributed.rank"},
      {with("ranks", "all"), "result.ranks"},
      // Well formed, but this job runs in one process.
      {with("ranks", {{{"ok", true}, {"distributed", {{"rank", 0}}}}}), "result.ranks: 1 ranks for job"}};
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
  Submit(json::parse(R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 3}})"));
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
  Message refused = Request({{"type", "submit"},
                             {"sweep", json::parse(R"({"name": "e", "select": {"name": "cpu-only"},
                                 "matrix": {"model": "mlp", "batch_size": 1, "device": "cuda"}})")}});
  EXPECT_EQ(refused.type, "error");
}

TEST_F(CoordinatorTest, TheSameSubmissionSentTwiceMakesOneSweep) {
  int64_t first = Submit(kCpuSweep, "cli-42-abc");
  Message again = Request({{"type", "submit"}, {"sweep", kCpuSweep}, {"submission_id", "cli-42-abc"}});
  ASSERT_EQ(again.type, "submitted");
  EXPECT_EQ(again.body["sweep_id"], first);
  EXPECT_EQ(again.body["existing"], true);
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[1]]"));
  EXPECT_EQ(Query("select count(*) from jobs"), json::parse("[[2]]"));
}

// A sweep of 12,000 jobs (above the 1,000 a submit stores within its request).
json LargeSweep(const std::string& name) {
  json sweep = {{"name", name}, {"placement", "any"}, {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 12000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  return sweep;
}

TEST_F(CoordinatorTest, ALargeSubmitGoesInSlicesWhileOthersAreAnswered) {
  Register("node-a");
  const json request = {{"v", 1}, {"type", "submit"}, {"request_id", "big"},
                        {"sweep", LargeSweep("big")}, {"submission_id", "cli-big"}};
  coordinator_->HandleClient({"client", request.dump()});
  // Not answered within the request: it is checked a slice per round.
  EXPECT_EQ(AnswerTo("big"), nullptr);
  // Meanwhile others are answered at once, a small submit included, and its job runs.
  Message status = Request({{"type", "status"}});
  EXPECT_EQ(status.type, "status_reply");
  int64_t small = Submit(kCpuSweep);
  EXPECT_GT(small, 0);
  // A resend while it is being checked waits for the same sweep.
  coordinator_->HandleClient({"client", json({{"v", 1}, {"type", "submit"}, {"request_id", "big-again"},
                                               {"sweep", LargeSweep("big")}, {"submission_id", "cli-big"}})
                                             .dump()});
  for (int i = 0; i < 10 && AnswerTo("big") == nullptr; ++i) coordinator_->Tick();
  ASSERT_NE(AnswerTo("big"), nullptr);
  Message submitted = AnswerTo("big")->message;
  ASSERT_EQ(submitted.type, "submitted") << submitted.body.dump();
  EXPECT_EQ(submitted.body["jobs"], 12000);
  const int64_t big = submitted.body["sweep_id"];
  ASSERT_NE(AnswerTo("big-again"), nullptr);
  EXPECT_EQ(AnswerTo("big-again")->message.body["sweep_id"], big);
  // Answered once its row is stored, before all its jobs are: status counts them.
  Message partial = Request({{"type", "status"}, {"sweep_id", big}});
  const json jobs = partial.body["sweeps"][0]["jobs"];
  EXPECT_EQ(jobs["total"], 12000);
  EXPECT_GT(jobs["storing"].get<int>(), 0);
  EXPECT_EQ(partial.body["sweeps"][0]["state"], "running");
  // A resend now finds the stored sweep, with every job it will have.
  Message again = Request({{"type", "submit"}, {"sweep", LargeSweep("big")}, {"submission_id", "cli-big"}});
  EXPECT_EQ(again.body["sweep_id"], big);
  EXPECT_EQ(again.body["jobs"], 12000);
  EXPECT_EQ(again.body["existing"], true);
  TickUntilStored(big);
  EXPECT_EQ(Query("select count(*), count(distinct spec) from jobs where sweep_id = " + std::to_string(big)),
            json::parse("[[12000, 12000]]"));
  // In matrix order: job ids follow the batch sizes.
  EXPECT_EQ(Query("select count(*) from jobs a join jobs b on b.job_id = a.job_id + 1 where a.sweep_id = " +
                  std::to_string(big) + " and b.sweep_id = a.sweep_id and json_extract(b.spec, '$.batch_size') "
                  "!= json_extract(a.spec, '$.batch_size') + 1"),
            json::parse("[[0]]"));
}

TEST_F(CoordinatorTest, ALargeSubmitIsAnsweredWithoutWaitingForEarlierOnesToBeStored) {
  const int64_t first = Submit(LargeSweep("first"));
  const int64_t second = Submit(LargeSweep("second"));
  ASSERT_GT(second, first);
  // Checks and stores go in turns: the second was answered while the first still stored.
  Message status = Request({{"type", "status"}, {"sweep_id", first}});
  EXPECT_GT(status.body["sweeps"][0]["jobs"]["storing"].get<int>(), 0);
  TickUntilStored(first);
  TickUntilStored(second);
  EXPECT_EQ(Query("select sweep_id, count(*) from jobs group by sweep_id order by sweep_id"),
            json::array({{first, 12000}, {second, 12000}}));
}

TEST_F(CoordinatorTest, ALargeSweepOnEveryAgentPinsEachSliceToTheAgentsOfTheFirst) {
  Register("node-a");
  Register("node-b");
  // 600 combinations on each of 2 agents: 1,200 jobs, more than a submit stores at once.
  json sweep = {{"name", "each"}, {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 600; ++b) sweep["matrix"]["batch_size"].push_back(b);
  Message submitted = Request({{"type", "submit"}, {"sweep", sweep}});
  ASSERT_EQ(submitted.type, "submitted") << submitted.body.dump();
  EXPECT_EQ(submitted.body["jobs"], 1200);
  EXPECT_EQ(submitted.body["agents"], json::array({"node-a", "node-b"}));
  const int64_t id = submitted.body["sweep_id"];
  // An agent that registers while the jobs go in gets none of them.
  Register("node-c");
  TickUntilStored(id);
  EXPECT_EQ(Query("select pinned_host, count(*), count(distinct spec) from jobs where sweep_id = " +
                  std::to_string(id) + " group by pinned_host order by pinned_host"),
            json::parse(R"([["node-a", 600, 600], ["node-b", 600, 600]])"));
}

TEST_F(CoordinatorTest, LargeSubmitsWaitingAtOnceAreBounded) {
  // Sixteen wait; the seventeenth is refused with nothing stored.
  for (int i = 0; i < 16; ++i) {
    coordinator_->HandleClient({"client", json{{"v", 1}, {"type", "submit"}, {"request_id", i},
                                               {"sweep", LargeSweep("s" + std::to_string(i))}}.dump()});
  }
  EXPECT_TRUE(sent_.empty());
  Message refused = Request({{"type", "submit"}, {"sweep", LargeSweep("one-too-many")}});
  ASSERT_EQ(refused.type, "error");
  EXPECT_EQ(refused.body["code"], "unavailable");
  EXPECT_EQ(refused.body["message"],
            "16 large sweeps are being taken in already; nothing was enqueued, send it again later");
}

TEST_F(CoordinatorTest, ALargeSubmitThatFailsItsChecksIsRefusedWithNothingStored) {
  // 12,000 combinations; the last 3,000 (matmul in int8) cannot run: found by the
  // second slice of checks, after the request itself was over.
  json sweep = {{"name", "bad"}, {"placement", "any"},
                {"matrix", {{"model", {"mlp", "matmul"}}, {"dtype", {"fp32", "int8"}}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  Message refused = Request({{"type", "submit"}, {"sweep", sweep}});
  ASSERT_EQ(refused.type, "error");
  EXPECT_EQ(refused.body["message"],
            "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[0]]"));
}

TEST_F(CoordinatorTest, LeftOutCombinationsAreNeitherStoredNorCountedNorWaitedFor) {
  Register("node-a");  // CPUs only
  // Placement each: the cuda half is excluded, so no agent with a GPU is needed.
  const json each = {{"name", "cpu-only"},
                     {"matrix", {{"model", "mlp"}, {"device", {"cpu", "cuda"}}, {"batch_size", {1, 2}}}},
                     {"exclude", {{{"device", "cuda"}}}}};
  Message small = Request({{"type", "submit"}, {"sweep", each}});
  ASSERT_EQ(small.type, "submitted") << small.body.dump();
  EXPECT_EQ(small.body["jobs"], 2);
  EXPECT_EQ(small.body["excluded"], 2);
  // A large one, taken in a slice per round: matmul's 3,000 int8 combinations skipped.
  json sweep = {{"name", "skip"}, {"placement", "any"}, {"invalid", "skip"},
                {"matrix", {{"model", {"mlp", "matmul"}}, {"dtype", {"fp32", "int8"}}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  coordinator_->HandleClient({"client", json({{"v", 1}, {"type", "submit"}, {"request_id", "skip"}, {"sweep", sweep}}).dump()});
  for (int i = 0; i < 10 && AnswerTo("skip") == nullptr; ++i) coordinator_->Tick();
  ASSERT_NE(AnswerTo("skip"), nullptr);
  const Message submitted = AnswerTo("skip")->message;
  ASSERT_EQ(submitted.type, "submitted") << submitted.body.dump();
  EXPECT_EQ(submitted.body["jobs"], 9000);
  EXPECT_EQ(submitted.body["skipped"]["count"], 3000);
  ASSERT_EQ(submitted.body["skipped"]["first"].size(), 20u);
  EXPECT_EQ(submitted.body["skipped"]["first"][0]["job"]["model"], "matmul");
  EXPECT_EQ(submitted.body["skipped"]["first"][0]["reason"],
            "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  const int64_t id = submitted.body["sweep_id"];
  TickUntilStored(id);
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(id)), json::parse("[[9000]]"));
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(id) +
                  " and json_extract(spec, '$.model') = 'matmul' and json_extract(spec, '$.dtype') = 'int8'"),
            json::parse("[[0]]"));
  Message status = Request({{"type", "status"}, {"sweep_id", id}});
  EXPECT_EQ(status.body["sweeps"][0]["jobs"]["total"], 9000);
}

TEST_F(CoordinatorTest, StatusSaysWhichJobRunsWhereAndWhenTheSweepShouldEnd) {
  Register("node-a");
  const int64_t id = Submit(json::parse(R"({"name": "s", "placement": "any", "labels": {"commit": "abc123"},
      "matrix": {"model": "mlp", "batch_size": [1, 2, 3, 4], "threads": 2}})"));
  auto finish_next = [&] {
    coordinator_->Tick();
    const json offer = LastTo("node-a/1", "job")->message.body;
    FromAgent("node-a/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]}, {"result", GoodResult(offer["spec"])}});
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

TEST_F(CoordinatorTest, ALargeSweepCancelledOrInterruptedWhileStoringEndsRight) {
  const int64_t cancelled = Submit(LargeSweep("cancel-me"));
  Message cancel = Request({{"type", "cancel"}, {"sweep_id", cancelled}});
  ASSERT_EQ(cancel.type, "cancelled");
  for (int i = 0; i < 5; ++i) coordinator_->Tick();
  // The cancelled sweep stores no more jobs.
  Message status = Request({{"type", "status"}, {"sweep_id", cancelled}});
  EXPECT_EQ(status.body["sweeps"][0]["state"], "cancelled");
  EXPECT_EQ(status.body["sweeps"][0]["jobs"]["storing"], 0);
  const json stored_when_cancelled =
      Query("select count(*) from jobs where sweep_id = " + std::to_string(cancelled));
  EXPECT_LT(stored_when_cancelled[0][0].get<int>(), 12000);
  EXPECT_EQ(status.body["sweeps"][0]["jobs"]["total"], stored_when_cancelled[0][0]);
  const int64_t interrupted = Submit(LargeSweep("restart-me"));
  const json partly = Query("select count(*) from jobs where sweep_id = " + std::to_string(interrupted));
  ASSERT_LT(partly[0][0].get<int>(), 12000);
  // A restart goes on from where the jobs stopped: each combination once, in order.
  StartWithStoreAt(dir_ / "results.db");
  TickUntilStored(interrupted);
  EXPECT_EQ(Query("select count(*), count(distinct spec), min(job_id) + 11999 = max(job_id) from jobs "
                  "where sweep_id = " + std::to_string(interrupted)),
            json::parse("[[12000, 12000, 1]]"));
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(cancelled)),
            stored_when_cancelled);
}

TEST_F(CoordinatorTest, AnOfferToADeadAgentCostsNoAttempt) {
  Register("dead");
  gone_.insert("dead/1");  // killed: the ROUTER no longer knows its peer
  Submit(json::parse(R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})"));
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
  Submit(json::parse(R"({"name": "one", "placement": "any", "matrix": {"model": "mlp", "batch_size": 1}})"));
  coordinator_->Tick();
  json offer = OffersTo("busy/1").at(0);
  for (int i = 0; i < 5; ++i) {
    FromAgent("busy/1", {{"v", 1}, {"type", "error"}, {"code", "failed_precondition"},
                         {"message", "agent is busy with job 7"}, {"job_id", offer["job_id"]},
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

TEST_F(CoordinatorTest, AHeartbeatMustNameItsJobProperly) {
  Register("node-a");
  sent_.clear();
  FromAgent("node-a/1", {{"v", 1}, {"type", "heartbeat"}, {"running", 5}});
  const Sent* error = LastTo("node-a/1", "error");
  ASSERT_NE(error, nullptr);
  EXPECT_NE(error->message.body["message"].get<std::string>().find("heartbeat.running"), std::string::npos);
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
  EXPECT_NE(two.body["message"].get<std::string>().find("only one SQL statement"), std::string::npos);
}

TEST_F(CoordinatorTest, CalibrationIsSharedByTheAgentsOfAMachineAndMatchesTheDtype) {
  auto start = [&](const std::string& name) {
    FromAgent(name + "/1", {{"v", 1}, {"type", "register"}, {"agent", name}, {"tags", json::array()},
                            {"calibrate", true}, {"capabilities", Capabilities(0, "box")}});
  };
  start("a1");
  start("a2");  // same machine: the calibration queued for a1 serves it too
  EXPECT_EQ(Query("select count(*) from jobs where kind = 'calibration'"), json::parse("[[1]]"));
  coordinator_->Tick();
  json calibration_job = LastTo("a1/1", "job")->message.body;
  json calibration = {{"ok", true},
                      {"kind", "calibration"},
                      {"calibration",
                       {{"cpu", {{"gemm_gflops_all", 200.0}, {"gemm_threads_all", 2}, {"gemm_gflops_1", 110.0},
                                 {"gemm_bf16_gflops_all", 400.0}, {"gemm_bf16_gflops_1", 220.0}}},
                        {"gpus", json::array()}}}};
  FromAgent("a1/1", {{"v", 1}, {"type", "result"}, {"job_id", calibration_job["job_id"]},
                     {"attempt", calibration_job["attempt"]}, {"result", calibration}});
  start("a3");  // started after the calibration: nothing new is queued
  EXPECT_EQ(Query("select count(*) from jobs where kind = 'calibration'"), json::parse("[[1]]"));

  // A bf16 result on a2 is read against the machine's bf16 peak.
  Submit(json::parse(R"({"name": "b", "placement": "each", "select": {"name": "a2"},
                         "matrix": {"model": "mlp", "batch_size": 1, "dtype": "bf16", "threads": 2}})"));
  coordinator_->Tick();
  json offer = LastTo("a2/1", "job")->message.body;
  json result = GoodResult(offer["spec"]);
  result["gflops"] = 100.0;
  FromAgent("a2/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                     {"attempt", offer["attempt"]}, {"result", result}});
  EXPECT_EQ(Query("select peak_gflops, fraction_of_peak from result_summary"),
            json::parse("[[400.0, 0.25]]"));
}

// The replies the coordinator sends have the shape of their golden examples, key by key
// at every depth: protocol.md, the examples and the code agree.
void ExpectSameKeys(const json& golden, const json& actual, const std::string& where) {
  if (golden.is_object()) {
    ASSERT_TRUE(actual.is_object()) << where;
    std::set<std::string> want, got;
    for (const auto& [key, value] : golden.items()) want.insert(key);
    for (const auto& [key, value] : actual.items()) got.insert(key);
    EXPECT_EQ(want, got) << where;
    for (const auto& [key, value] : golden.items()) {
      if (actual.contains(key) && !actual[key].is_null() && !value.is_null()) {
        ExpectSameKeys(value, actual[key], where + "." + key);
      }
    }
  } else if (golden.is_array() && !golden.empty() && actual.is_array() && !actual.empty()) {
    ExpectSameKeys(golden[0], actual[0], where + "[0]");
  }
}

TEST_F(CoordinatorTest, RepliesHaveTheShapeOfTheirGoldenExamples) {
  auto golden = [](const std::string& type) {
    return json::parse(ReadFile(kSchemas / "golden" / (type + ".json")));
  };
  Register("node-a");
  ExpectSameKeys(golden("registered"), LastTo("node-a/1", "registered")->message.body, "registered");
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
  plain_job["spec"].erase("parallel");
  plain_job["spec"].erase("placement");
  ExpectSameKeys(plain_job, LastTo("node-a/1", "job")->message.body, "job");
  json offer = LastTo("node-a/1", "job")->message.body;
  FromAgent("node-a/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]}, {"result", {{"ok", true}}}});
  ExpectSameKeys(golden("ack"), LastTo("node-a/1", "ack")->message.body, "ack");
  coordinator_->Tick();  // the rejected attempt is lost; the job is offered again
  offer = LastTo("node-a/1", "job")->message.body;
  FromAgent("node-a/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]}, {"result", GoodResult(offer["spec"])}});
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
  ExpectSameKeys(golden("cancelled"), Request({{"type", "cancel"}, {"sweep_id", 1}}).body, "cancelled");
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
  FromAgent("node-a/1", {{"v", 1}, {"type", "rendezvous"}, {"job_id", rank0["job_id"]},
                         {"attempt", rank0["attempt"]}, {"store", "10.0.0.1:41327"}});
  ASSERT_EQ(OffersTo("node-b/1").size(), 1u);
  const json rank1 = OffersTo("node-b/1").front();
  ExpectSameKeys(golden("job"), rank1, "job");
  EXPECT_EQ(rank1["gang"], json({{"rank", 1}, {"world_size", 2}, {"store", "10.0.0.1:41327"}}));
  EXPECT_EQ(rank1["attempt"], rank0["attempt"]);
  // A rendezvous from anyone but rank 0's agent is ignored.
  sent_.clear();
  FromAgent("node-b/1", {{"v", 1}, {"type", "rendezvous"}, {"job_id", rank0["job_id"]},
                         {"attempt", rank0["attempt"]}, {"store", "10.0.0.2:1"}});
  EXPECT_TRUE(OffersTo("node-a/1").empty());

  auto rank_result = [](const json& offer, int rank, bool ok) {
    json result = GoodResult(offer["spec"]);
    result["distributed"] = {{"rank", rank}, {"world_size", 2}, {"address", rank == 0 ? "10.0.0.1" : "10.0.0.2"}};
    if (!ok) result = {{"ok", false}, {"error", "boom"}, {"distributed", {{"rank", rank}}}};
    return json{{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                {"attempt", offer["attempt"]}, {"result", result}};
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
  FromAgent("node-a/1", {{"v", 1}, {"type", "rendezvous"}, {"job_id", again0["job_id"]},
                         {"attempt", again0["attempt"]}, {"store", "10.0.0.1:41328"}});
  const json again1 = OffersTo("node-b/1").back();
  ASSERT_EQ(again1["job_id"], again0["job_id"]);
  FromAgent("node-b/1", rank_result(again1, 1, false));
  const Sent* stop = LastTo("node-a/1", "stop");
  ASSERT_NE(stop, nullptr);
  ExpectSameKeys(golden("stop"), stop->message.body, "stop");
  EXPECT_EQ(stop->message.body["job_id"], again0["job_id"]);
  EXPECT_EQ(Query("select state, error from jobs where job_id = " + again0["job_id"].dump()),
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
  EXPECT_EQ(Query("select state from jobs where sweep_id = 4"), json::parse(R"([["running"], ["running"]])"));
  const json waiting = Request({{"type", "status"}, {"sweep_id", 3}}).body["waiting"];
  ASSERT_EQ(waiting.size(), 1u) << waiting.dump();
  EXPECT_EQ(waiting[0]["matching_agents"], 0);
  EXPECT_NE(waiting[0]["reason"].get<std::string>().find("gang of 3 ranks spread over agents and only 2"),
            std::string::npos) << waiting.dump();
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
  FromAgent("node-big/1", {{"v", 1}, {"type", "register"}, {"agent", "node-big"},
                           {"tags", json::array()}, {"capabilities", big}});
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-big/1").size(), 1u);
  EXPECT_TRUE(OffersTo("node-big/1").front()["spec"].contains("parallel"));
}

TEST_F(CoordinatorTest, ReplicasGoOnlyToAnAgentWithACpuPerThreadOfEveryCopy) {
  Register("node-a");  // runs jobs on CPUs 0-1
  json big = Capabilities(0, "node-big");
  big["cpus"] = "0-3";
  // The same rule as a gang's (JobLocalProcesses x threads), even in a spread sweep:
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
  result["serving"] = {{"target_qps", 4000.0},     {"achieved_qps", 3990.0},
                       {"latency_p50_ms", 1.0},    {"latency_p90_ms", 2.0},
                       {"latency_p99_ms", 4.5},    {"queries", 40000},
                       {"batches", 10000},         {"mean_batch", 4.0},
                       {"max_batch", 8},           {"max_wait_ms", 1.0},
                       {"slo_p99_ms", 5.0},        {"max_qps_within_slo", 4000.0},
                       {"probes", json::array()},  {"valid", true}};
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

json ResultFor(const json& offer) {
  return {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
          {"attempt", offer["attempt"]}, {"result", GoodResult(offer["spec"])}};
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
  coordinator_->HandleClient({"client", json{{"v", 1}, {"type", "submit"}, {"request_id", "full"},
                                             {"sweep", kCpuSweep}}.dump()});
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

TEST_F(CoordinatorTest, ALargeSweepsSliceWhoseCommitFailsIsStoredAgainAndItsAcceptanceRefused) {
  if (std::string why = MountSmallDisk("size=16m"); !why.empty()) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): " << why;
  }
  StartWithStoreAt(dir_ / "disk" / "results.db");
  json sweep = {{"name", "large"}, {"placement", "any"}, {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  auto round = [&] {
    coordinator_->BeginRound();
    coordinator_->Tick();
    coordinator_->EndRound();
  };
  coordinator_->HandleClient({"client", json{{"v", 1}, {"type", "submit"}, {"request_id", "big"},
                                             {"sweep", sweep}}.dump()});
  for (int i = 0; i < 10 && AnswerTo("big") == nullptr; ++i) round();
  ASSERT_NE(AnswerTo("big"), nullptr);
  ASSERT_EQ(AnswerTo("big")->message.type, "submitted");
  const int64_t id = AnswerTo("big")->message.body["sweep_id"];

  // The disk fills: slices fail to commit and are taken back; a second large sweep,
  // checked meanwhile, cannot be accepted and is refused with nothing kept.
  FillSmallDisk();
  round();
  round();
  EXPECT_EQ(Query("select count(*) from jobs"), json::parse("[[1000]]"));  // its first slice only
  EXPECT_GE(coordinator_->counters().store_errors, 2);
  sweep["name"] = "refused";
  coordinator_->HandleClient({"client", json{{"v", 1}, {"type", "submit"}, {"request_id", "second"},
                                             {"sweep", sweep}}.dump()});
  for (int i = 0; i < 10 && AnswerTo("second") == nullptr; ++i) round();
  ASSERT_NE(AnswerTo("second"), nullptr);
  EXPECT_EQ(AnswerTo("second")->message.type, "error") << AnswerTo("second")->message.body.dump();
  EXPECT_GT(coordinator_->counters().store_errors, 0);

  EXPECT_EQ(Query("select count(*) from jobs"), json::parse("[[1000]]"));  // its first slice only
  // Space comes back: the first sweep's jobs are all stored, once each, in order.
  FreeSmallDisk();
  for (int i = 0; i < 20; ++i) round();
  EXPECT_EQ(Query("select count(*), count(distinct spec), max(job_id) - min(job_id) + 1 from jobs "
                  "where sweep_id = " + std::to_string(id)),
            json::parse("[[3000, 3000, 3000]]"));
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[1]]"));
}

TEST_F(CoordinatorTest, PruneDropsOldSamplesInStepsAndAnswersWhenDone) {
  Register("node-a");
  Submit(kCpuSweep);
  for (int job = 0; job < 2; ++job) {
    coordinator_->Tick();
    json offer = LastTo("node-a/1", "job")->message.body;
    FromAgent("node-a/1", {{"v", 1}, {"type", "result"}, {"job_id", offer["job_id"]},
                           {"attempt", offer["attempt"]}, {"result", GoodResult(offer["spec"])}});
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
    coordinator_->HandleClient(
        {"client", json({{"v", 1}, {"type", "prune"}, {"request_id", id},
                         {"samples_older_than_s", older_than_s}}).dump()});
  };
  auto reply_to = [&](const std::string& id) -> const Sent* {
    for (auto it = sent_.rbegin(); it != sent_.rend(); ++it) {
      if (it->side == Side::kClients && it->message.body.value("request_id", json()) == id) return &*it;
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
  EXPECT_EQ(Request({{"type", "results"}, {"sweep_id", sweep}}).type, "rows");  // none yet: no error
}

}  // namespace
}  // namespace benchfleet
