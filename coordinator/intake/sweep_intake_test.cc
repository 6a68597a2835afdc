// The sweep intake driven through the coordinator in process (coordinator_fixture.h):
// small and large submits, resends, slices, and a slice whose commit fails.
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

TEST_F(CoordinatorTest, TheSameSubmissionSentTwiceMakesOneSweep) {
  int64_t first = Submit(kCpuSweep, "cli-42-abc");
  Message again =
      Request({{"type", "submit"}, {"sweep", kCpuSweep}, {"submission_id", "cli-42-abc"}});
  ASSERT_EQ(again.type, "submitted");
  EXPECT_EQ(again.body["sweep_id"], first);
  EXPECT_EQ(again.body["existing"], true);
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[1]]"));
  EXPECT_EQ(Query("select count(*) from jobs"), json::parse("[[2]]"));
}

// A sweep of 12,000 jobs (above the 1,000 a submit stores within its request).
json LargeSweep(const std::string& name) {
  json sweep = {{"name", name},
                {"placement", "any"},
                {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 12000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  return sweep;
}

TEST_F(CoordinatorTest, ALargeSubmitGoesInSlicesWhileOthersAreAnswered) {
  Register("node-a");
  const json request = {{"v", 1},
                        {"type", "submit"},
                        {"request_id", "big"},
                        {"sweep", LargeSweep("big")},
                        {"submission_id", "cli-big"}};
  coordinator_->HandleClient({"client", request.dump()});
  // Not answered within the request: it is checked a slice per round.
  EXPECT_EQ(AnswerTo("big"), nullptr);
  // Meanwhile others are answered at once, a small submit included, and its job runs.
  Message status = Request({{"type", "status"}});
  EXPECT_EQ(status.type, "status_reply");
  int64_t small = Submit(kCpuSweep);
  EXPECT_GT(small, 0);
  // A resend while it is being checked waits for the same sweep.
  coordinator_->HandleClient({"client", json({{"v", 1},
                                              {"type", "submit"},
                                              {"request_id", "big-again"},
                                              {"sweep", LargeSweep("big")},
                                              {"submission_id", "cli-big"}})
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
  Message again =
      Request({{"type", "submit"}, {"sweep", LargeSweep("big")}, {"submission_id", "cli-big"}});
  EXPECT_EQ(again.body["sweep_id"], big);
  EXPECT_EQ(again.body["jobs"], 12000);
  EXPECT_EQ(again.body["existing"], true);
  TickUntilStored(big);
  EXPECT_EQ(Query("select count(*), count(distinct spec) from jobs where sweep_id = " +
                  std::to_string(big)),
            json::parse("[[12000, 12000]]"));
  // In matrix order: job ids follow the batch sizes.
  EXPECT_EQ(
      Query(
          "select count(*) from jobs a join jobs b on b.job_id = a.job_id + 1 where a.sweep_id = " +
          std::to_string(big) +
          " and b.sweep_id = a.sweep_id and json_extract(b.spec, '$.batch_size') "
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
    coordinator_->HandleClient({"client", json{{"v", 1},
                                               {"type", "submit"},
                                               {"request_id", i},
                                               {"sweep", LargeSweep("s" + std::to_string(i))}}
                                              .dump()});
  }
  EXPECT_TRUE(sent_.empty());
  Message refused = Request({{"type", "submit"}, {"sweep", LargeSweep("one-too-many")}});
  ASSERT_EQ(refused.type, "error");
  EXPECT_EQ(refused.body["code"], "unavailable");
  EXPECT_EQ(
      refused.body["message"],
      "16 large sweeps are being taken in already; nothing was enqueued, send it again later");
}

TEST_F(CoordinatorTest, ALargeSubmitThatFailsItsChecksIsRefusedWithNothingStored) {
  // 12,000 combinations; the last 3,000 (matmul in int8) cannot run: found by the
  // second slice of checks, after the request itself was over.
  json sweep = {
      {"name", "bad"},
      {"placement", "any"},
      {"matrix",
       {{"model", {"mlp", "matmul"}}, {"dtype", {"fp32", "int8"}}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  Message refused = Request({{"type", "submit"}, {"sweep", sweep}});
  ASSERT_EQ(refused.type, "error");
  EXPECT_EQ(
      refused.body["message"],
      "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[0]]"));
}

TEST_F(CoordinatorTest, LeftOutCombinationsAreNeitherStoredNorCountedNorWaitedFor) {
  Register("node-a");  // CPUs only
  // Placement each: the cuda half is excluded, so no agent with a GPU is needed.
  const json each = {
      {"name", "cpu-only"},
      {"matrix", {{"model", "mlp"}, {"device", {"cpu", "cuda"}}, {"batch_size", {1, 2}}}},
      {"exclude", {{{"device", "cuda"}}}}};
  Message small = Request({{"type", "submit"}, {"sweep", each}});
  ASSERT_EQ(small.type, "submitted") << small.body.dump();
  EXPECT_EQ(small.body["jobs"], 2);
  EXPECT_EQ(small.body["excluded"], 2);
  // A large one, taken in a slice per round: matmul's 3,000 int8 combinations skipped.
  json sweep = {
      {"name", "skip"},
      {"placement", "any"},
      {"invalid", "skip"},
      {"matrix",
       {{"model", {"mlp", "matmul"}}, {"dtype", {"fp32", "int8"}}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  coordinator_->HandleClient(
      {"client",
       json({{"v", 1}, {"type", "submit"}, {"request_id", "skip"}, {"sweep", sweep}}).dump()});
  for (int i = 0; i < 10 && AnswerTo("skip") == nullptr; ++i) coordinator_->Tick();
  ASSERT_NE(AnswerTo("skip"), nullptr);
  const Message submitted = AnswerTo("skip")->message;
  ASSERT_EQ(submitted.type, "submitted") << submitted.body.dump();
  EXPECT_EQ(submitted.body["jobs"], 9000);
  EXPECT_EQ(submitted.body["skipped"]["count"], 3000);
  ASSERT_EQ(submitted.body["skipped"]["first"].size(), 20u);
  EXPECT_EQ(submitted.body["skipped"]["first"][0]["job"]["model"], "matmul");
  EXPECT_EQ(
      submitted.body["skipped"]["first"][0]["reason"],
      "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  const int64_t id = submitted.body["sweep_id"];
  TickUntilStored(id);
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(id)),
            json::parse("[[9000]]"));
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(id) +
                  " and json_extract(spec, '$.model') = 'matmul' and json_extract(spec, '$.dtype') "
                  "= 'int8'"),
            json::parse("[[0]]"));
  Message status = Request({{"type", "status"}, {"sweep_id", id}});
  EXPECT_EQ(status.body["sweeps"][0]["jobs"]["total"], 9000);
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
  const json partly =
      Query("select count(*) from jobs where sweep_id = " + std::to_string(interrupted));
  ASSERT_LT(partly[0][0].get<int>(), 12000);
  // A restart goes on from where the jobs stopped: each combination once, in order.
  StartWithStoreAt(dir_ / "results.db");
  TickUntilStored(interrupted);
  EXPECT_EQ(
      Query("select count(*), count(distinct spec), min(job_id) + 11999 = max(job_id) from jobs "
            "where sweep_id = " +
            std::to_string(interrupted)),
      json::parse("[[12000, 12000, 1]]"));
  EXPECT_EQ(Query("select count(*) from jobs where sweep_id = " + std::to_string(cancelled)),
            stored_when_cancelled);
}

TEST_F(CoordinatorTest, ALargeSweepsSliceWhoseCommitFailsIsStoredAgainAndItsAcceptanceRefused) {
  if (std::string why = MountSmallDisk("size=16m"); !why.empty()) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): " << why;
  }
  StartWithStoreAt(dir_ / "disk" / "results.db");
  json sweep = {{"name", "large"},
                {"placement", "any"},
                {"matrix", {{"model", "mlp"}, {"batch_size", json::array()}}}};
  for (int b = 1; b <= 3000; ++b) sweep["matrix"]["batch_size"].push_back(b);
  auto round = [&] {
    coordinator_->BeginRound();
    coordinator_->Tick();
    coordinator_->EndRound();
  };
  coordinator_->HandleClient(
      {"client",
       json{{"v", 1}, {"type", "submit"}, {"request_id", "big"}, {"sweep", sweep}}.dump()});
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
  coordinator_->HandleClient(
      {"client",
       json{{"v", 1}, {"type", "submit"}, {"request_id", "second"}, {"sweep", sweep}}.dump()});
  for (int i = 0; i < 10 && AnswerTo("second") == nullptr; ++i) round();
  ASSERT_NE(AnswerTo("second"), nullptr);
  EXPECT_EQ(AnswerTo("second")->message.type, "error") << AnswerTo("second")->message.body.dump();
  EXPECT_GT(coordinator_->counters().store_errors, 0);

  EXPECT_EQ(Query("select count(*) from jobs"), json::parse("[[1000]]"));  // its first slice only
  // Space comes back: the first sweep's jobs are all stored, once each, in order.
  FreeSmallDisk();
  for (int i = 0; i < 20; ++i) round();
  EXPECT_EQ(Query("select count(*), count(distinct spec), max(job_id) - min(job_id) + 1 from jobs "
                  "where sweep_id = " +
                  std::to_string(id)),
            json::parse("[[3000, 3000, 3000]]"));
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[1]]"));
}

// A thread_placement no agent can give (spread on fewer cores than threads, smt without
// SMT) is refused at submit naming the axis value, by the rule the agent places by.
TEST_F(CoordinatorTest, AThreadPlacementNoAgentCanGiveIsRefusedAtSubmit) {
  json capabilities = Capabilities(0, "node-a");
  capabilities["cpu_shape"] = {
      {"cpus", 2}, {"cores", 2}, {"threads_per_core", 1}, {"largest_node", 2}};
  FromAgent("node-a/1", {{"v", 1},
                         {"type", "register"},
                         {"agent", "node-a"},
                         {"tags", json::array()},
                         {"capabilities", capabilities}});
  auto submit = [&](const std::string& name, const json& threads, const json& placements) {
    return Request({{"type", "submit"},
                    {"sweep",
                     {{"name", name},
                      {"placement", "any"},
                      {"matrix",
                       {{"model", "mlp"},
                        {"batch_size", 8},
                        {"threads", threads},
                        {"thread_placement", placements}}}}}});
  };
  Message spread = submit("spread", {2, 4}, {nullptr, "spread"});
  ASSERT_EQ(spread.type, "error") << spread.body.dump();
  EXPECT_EQ(
      spread.body["message"],
      "matrix.thread_placement[1]: no registered agent can place 4 threads by \"spread\" (node-a: "
      "thread_placement \"spread\": one thread per core needs 4 cores; the agent has 2 CPUs on 2 "
      "cores, "
      "1 hardware thread a core, 2 in the largest NUMA node); nothing was enqueued");
  Message smt = submit("smt", {2}, {"smt"});
  ASSERT_EQ(smt.type, "error") << smt.body.dump();
  EXPECT_NE(smt.body["message"].get<std::string>().find(
                "matrix.thread_placement[0]: no registered agent can place 2 threads by \"smt\""),
            std::string::npos)
      << smt.body.dump();
  EXPECT_EQ(Query("select count(*) from sweeps"), json::parse("[[0]]"));
  // What the agent can give is taken: spread of 2 threads on its 2 cores, and the default.
  Message fits = submit("fits", {1, 2}, {nullptr, "spread", "node"});
  ASSERT_EQ(fits.type, "submitted") << fits.body.dump();
  EXPECT_EQ(fits.body["jobs"], 6);
  // An agent that did not say its CPUs' shape (an older one) may be able to: taken, and
  // that agent refuses the job itself if it cannot.
  Register("node-b");
  Message unknown = submit("unknown", {4}, {"spread"});
  EXPECT_EQ(unknown.type, "submitted") << unknown.body.dump();
}

}  // namespace
}  // namespace benchfleet
