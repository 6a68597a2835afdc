// The whole path on loopback: a real coordinator and two real agents (each running real
// LibTorch workers), a sweep submitted over ZeroMQ, results checked in the SQLite file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <zmq.hpp>

#include "common/transport.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Small enough to finish fast on a loaded 2-core machine, long enough for n >= 10.
json SixJobSweep() {
  return json::parse(R"({
    "name": "integration",
    "select": {"device": "cpu"},
    "placement": "any",
    "matrix": {"model": ["mlp"], "batch_size": [1, 16, 64], "threads": [1, 2]},
    "models": {"mlp": {"layers": [256, 256, 10]}},
    "timing": {"warmup_s": 0.05, "min_time_s": 0.3, "max_time_s": 2, "target_ci": 0.1}})");
}

class IntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.StartCoordinator()) << fleet_.Logs();
    ASSERT_TRUE(fleet_.StartAgent("node-a"));
    ASSERT_TRUE(fleet_.StartAgent("node-b"));
    ASSERT_TRUE(fleet_.WaitForAgents(2, 60s)) << fleet_.Logs();
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << fleet_.Logs();
  }
  Fleet fleet_;
};

TEST_F(IntegrationTest, SweepRunsOnTwoAgentsAndEveryResultLandsInSqlite) {
  int64_t sweep_id = fleet_.Submit(SixJobSweep());
  ASSERT_GT(sweep_id, 0);
  json sweep = fleet_.WaitForSweep(sweep_id, 300s);
  ASSERT_TRUE(sweep.is_object()) << "sweep did not finish in time";
  EXPECT_EQ(sweep["state"], "done");
  EXPECT_EQ(sweep["jobs"]["done"], 6);
  EXPECT_EQ(sweep["jobs"]["failed"], 0);

  const std::string where = " from result_summary where sweep_id = " + std::to_string(sweep_id);
  json rows = QueryRows(fleet_.db_path(), "select *" + where);
  ASSERT_EQ(rows.size(), 6u);
  std::set<std::string> hosts;
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    hosts.insert(row["host"].get<std::string>());
    EXPECT_GE(row["n"].get<int64_t>(), 10);
    double median = row["median_ms"];
    EXPECT_GT(median, 0);
    double expected_throughput = row["batch_size"].get<double>() * 1000.0 / median;
    EXPECT_NEAR(row["throughput_per_s"].get<double>(), expected_throughput,
                expected_throughput * 0.01);
    // A one-thread job keeps one CPU busy, unless the host was busy enough to take it
    // away for a while, which the result then says (`disturbed`).
    if (row["threads"] == 1 && row["disturbed"] != 1) {
      EXPECT_GE(row["effective_threads"].get<double>(), 0.75);
      EXPECT_LE(row["effective_threads"].get<double>(), 1.25);
    }
    EXPECT_GT(row["peak_rss_mb"].get<double>(), 0);
    EXPECT_LE(row["p90_ms"].get<double>(), row["p99_ms"].get<double>());
    EXPECT_FALSE(row["finished_at"].get<std::string>().empty());
  }
  // Both agents registered their capabilities; placement "any" may give all jobs to one.
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(*) from hosts"), 2);
  EXPECT_EQ(QueryValue(fleet_.db_path(),
                       "select count(*) from hosts where json_extract(capabilities, "
                       "'$.torch.torch_version') is not null"),
            2);
  // Raw samples are kept, one BLOB per result; the samples view unpacks them.
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(distinct job_id) from samples"), 6);
  EXPECT_EQ(QueryValue(fleet_.db_path(),
                       "select count(*) from result_samples rs join results r using (job_id) "
                       "where rs.n = r.n and length(rs.ms_f32le) = 4 * r.n"),
            6);
  // Retention: an age that is not one is refused; a prune drops every raw sample and
  // keeps every result.
  std::string out, err;
  EXPECT_NE(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "prune",
                        "--samples-older-than", "soon"},
                       &out, &err),
            0);
  EXPECT_NE(err.find("an age is a number and a unit"), std::string::npos) << err;
  ASSERT_EQ(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "prune",
                        "--samples-older-than", "0s"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("dropped the raw samples of 6 results"), std::string::npos) << out;
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(*) from result_samples"), 0);
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(*) from result_summary"), 6);
  EXPECT_EQ(QueryValue(fleet_.db_path(), "PRAGMA integrity_check"), "ok");
}

TEST_F(IntegrationTest, PlacementEachRunsEveryCombinationOnEveryAgent) {
  json sweep = SixJobSweep();
  sweep["placement"] = "each";
  sweep["matrix"]["batch_size"] = {8};
  sweep["matrix"]["threads"] = {1};
  int64_t sweep_id = fleet_.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  ASSERT_TRUE(fleet_.WaitForSweep(sweep_id, 120s).is_object());
  json hosts = QueryRows(fleet_.db_path(), "select host from result_summary where sweep_id = " +
                                               std::to_string(sweep_id) + " order by host");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0]["host"], "node-a");
  EXPECT_EQ(hosts[1]["host"], "node-b");
}

// profile and checkpointing from worker through agent to coordinator: the operators land
// in op_profile and the views and the CLI's --view pair them.
TEST_F(IntegrationTest, ProfiledAndCheckpointedJobsReachTheirTableAndViews) {
  json sweep = SixJobSweep();
  sweep["matrix"] = json::parse(R"({"model": "mlp", "mode": "train", "batch_size": 16,
      "threads": 1, "profile": true, "checkpointing": [false, true]})");
  int64_t sweep_id = fleet_.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  json done = fleet_.WaitForSweep(sweep_id, 180s);
  ASSERT_TRUE(done.is_object()) << "sweep did not finish in time";
  EXPECT_EQ(done["jobs"]["done"], 2);
  const std::string db = fleet_.db_path();
  EXPECT_EQ(QueryValue(db, "select count(distinct job_id) from op_profile"), 2);
  EXPECT_EQ(QueryValue(db, "select count(*) from op_profile where calls < 1 or self_us > total_us"),
            0);
  EXPECT_EQ(QueryValue(db, "select count(*) from results where detail like '%\"op_profile\"%'"), 0);
  EXPECT_EQ(QueryValue(db,
                       "select count(*) from result_summary where profile_iterations >= 1 "
                       "and step_peak_alloc_mb > 0"),
            2);
  // Each job is its own baseline (cpu, fp32, one thread; checkpointing is part of the group).
  EXPECT_EQ(QueryValue(db,
                       "select count(*) from op_comparison where speedup is not null and "
                       "base_job_id = job_id"),
            QueryValue(db, "select count(*) from op_profile where self_us > 0"));
  json pair = QueryRows(db, "select time_ratio, memory_ratio from checkpointing_comparison");
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_GT(pair[0]["time_ratio"].get<double>(), 0);
  EXPECT_GT(pair[0]["memory_ratio"].get<double>(), 0);
  for (const char* view : {"ops", "checkpointing"}) {
    std::string out, err;
    ASSERT_EQ(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "results", "--view",
                          view, "--format", "csv"},
                         &out, &err),
              0)
        << err;
    EXPECT_GE(std::count(out.begin(), out.end(), '\n'), 2) << view << ": " << out;
  }
}

TEST_F(IntegrationTest, CliRejectsBadSweepFilesAndEnqueuesNothing) {
  struct Case {
    std::string text;
    std::string expected_words;
  };
  const std::vector<Case> cases = {
      {"this is not json", "not valid JSON"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"colour":"red"})",
       "unknown key \"colour\""},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[-4]}})", "matrix.batch_size[0]"},
      {R"({"name":"x","matrix":{"model":["resnet9000"],"batch_size":[1]}})",
       "unknown model \"resnet9000\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string file = fleet_.dir("bad-sweep.json");
    std::ofstream(file) << c.text;
    std::string out, err;
    int code = RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "submit", file},
                          &out, &err);
    EXPECT_EQ(code, 2);
    EXPECT_NE(err.find(c.expected_words), std::string::npos) << err;
    EXPECT_NE(err.find("nothing was enqueued"), std::string::npos) << err;
  }
  // The coordinator validates too: a client that skips local validation gets the same.
  std::string error;
  json bad = SixJobSweep();
  bad["matrix"]["batch_size"] = {-4};
  EXPECT_EQ(fleet_.Submit(bad, &error), -1);
  EXPECT_NE(error.find("matrix.batch_size[0]"), std::string::npos) << error;
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(*) from sweeps"), 0);
  EXPECT_EQ(QueryValue(fleet_.db_path(), "select count(*) from jobs"), 0);
}

TEST_F(IntegrationTest, CliSubmitWaitsWithProgressAndShowsResults) {
  const std::string file = fleet_.dir("sweep.json");
  json sweep = SixJobSweep();
  sweep["matrix"]["batch_size"] = {4};
  sweep["matrix"]["threads"] = {1};
  std::ofstream(file) << sweep.dump();
  std::string out, err;
  int code = RunCommand(
      {kCliBin, "--coordinator", fleet_.clients_endpoint(), "submit", file, "--wait"}, &out, &err);
  ASSERT_EQ(code, 0) << out << err;
  EXPECT_NE(out.find("sweep 1 \"integration\": 1 jobs"), std::string::npos) << out;
  EXPECT_NE(err.find("1/1 jobs"), std::string::npos) << err;  // the progress line
  code = RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "results", "--sweep", "1",
                     "--format", "csv"},
                    &out, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(out.rfind("sweep,sweep_id,job_id,host,device,model", 0), 0u) << out;  // every column
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);
  code = RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "query",
                     "select count(*) as n from result_summary"},
                    &out, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_NE(out.find("1"), std::string::npos);
  code =
      RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "query", "delete from jobs"},
                 &out, &err);
  EXPECT_NE(code, 0);
  EXPECT_NE(err.find("read-only"), std::string::npos) << err;
  // The query thread's connection opens no other file: ATTACH, and a read through it.
  const std::string other = fleet_.dir("other.db");
  for (const std::string& sql :
       {"ATTACH '" + other + "' AS o", std::string("select * from o.sqlite_master")}) {
    code =
        RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "query", sql}, &out, &err);
    EXPECT_EQ(code, 2) << sql << ": " << err;
  }
  EXPECT_FALSE(std::ifstream(other).good()) << "ATTACH made " << other;
}

// A store read with no daemon left: the sweep's results and its report from the file.
TEST_F(IntegrationTest, StoreIsReadWithEveryDaemonStopped) {
  json sweep = SixJobSweep();
  sweep["matrix"]["batch_size"] = {4};
  sweep["matrix"]["threads"] = {1};
  const int64_t sweep_id = fleet_.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  ASSERT_EQ(fleet_.WaitForSweep(sweep_id, 300s).value("state", ""), "done") << fleet_.Logs();
  for (const char* agent : {"node-a", "node-b"}) EXPECT_EQ(fleet_.agent(agent).Stop(), 0);
  EXPECT_EQ(fleet_.coordinator().Stop(), 0);
  std::string out, err;
  int code =
      RunCommand({kCliBin, "results", "--db", fleet_.db_path(), "--format", "csv"}, &out, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;  // the header and the one result
  EXPECT_NE(out.find("integration"), std::string::npos) << out;
  const std::string page = fleet_.dir("r.html");
  code = RunCommand({kCliBin, "report", "--db", fleet_.db_path(), "--sweep",
                     std::to_string(sweep_id), "--out", page},
                    &out, &err);
  ASSERT_EQ(code, 0) << err;
  std::stringstream html;
  html << std::ifstream(page).rdbuf();
  EXPECT_NE(html.str().find("integration"), std::string::npos);  // the sweep's name in the header
  EXPECT_NE(html.str().find("<svg"), std::string::npos);         // and a chart of it
  // A file that is not there is the user's mistake: exit 2, nothing made.
  code = RunCommand({kCliBin, "results", "--db", fleet_.dir("nope.db")}, &out, &err);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
}

TEST_F(IntegrationTest, MalformedMessagesAreAnsweredAndCountedWhileServing) {
  zmq::context_t context;
  auto rogue = ConnectDealer(context, fleet_.agents_endpoint(), "rogue");
  ASSERT_TRUE(rogue.ok());
  for (const std::string& garbage : {std::string("\x00\x01garbage", 9), std::string("{\"v\":1}"),
                                     std::string(R"({"v":1,"type":"result","job_id":"x"})"),
                                     std::string(R"({"v":7,"type":"heartbeat"})")}) {
    ASSERT_TRUE(SendFrames(*rogue, {garbage}).ok());
  }
  ASSERT_TRUE(SendFrames(*rogue, {"two", "frames"}).ok());
  // Every bad message gets an error back.
  int errors = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto frames = ReceiveFrames(*rogue);
        if (frames.ok() && frames->has_value()) {
          auto reply = Decode((*frames)->front());
          if (reply.ok() && reply->type == "error") ++errors;
        }
        return errors == 5;
      },
      10s));
  json status = fleet_.Status();
  ASSERT_TRUE(status.is_object()) << "coordinator stopped answering";
  EXPECT_GE(status["counters"]["malformed_messages"].get<int>(), 5);
  EXPECT_EQ(status["agents"].size(), 2u);  // the good agents are still there
  EXPECT_TRUE(fleet_.coordinator().running());
}

TEST_F(IntegrationTest, KilledAgentsJobIsRequeuedAndCompletesElsewhere) {
  json sweep = SixJobSweep();
  sweep["matrix"]["batch_size"] = {8};
  sweep["matrix"]["threads"] = {1};
  sweep["timing"]["min_time_s"] = 3;  // long enough to kill it mid-job
  sweep["timing"]["max_time_s"] = 4;
  int64_t sweep_id = fleet_.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  std::string victim;
  ASSERT_TRUE(WaitFor(
      [&] {
        json status = fleet_.Status();
        for (const json& agent : status.value("agents", json::array())) {
          if (agent["state"] == "busy") victim = agent["agent"];
        }
        return !victim.empty();
      },
      60s));
  fleet_.agent(victim).Signal(SIGKILL);
  json done = fleet_.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object());
  EXPECT_EQ(done["jobs"]["done"], 1);
  json row =
      QueryRows(fleet_.db_path(), "select host, attempt from result_summary where sweep_id = " +
                                      std::to_string(sweep_id));
  ASSERT_EQ(row.size(), 1u);
  EXPECT_NE(row[0]["host"], victim);
  EXPECT_EQ(row[0]["attempt"], 2);
}

}  // namespace
}  // namespace benchfleet::testing
