// Models by content end to end (schemas/sweep.md, Models by content): a TorchScript file
// that only the submitting machine has is uploaded by `benchfleet submit`, kept by the
// coordinator under its SHA-256, fetched and checked by two agents in state
// directories of their own, and named by its hash in every job and series. A new file
// starts a new series, a tampered cached copy is fetched again, and a path on an
// agent's host runs only under the directory that agent allows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/sha256.h"
#include "tests/fleet.h"
#include "tests/torchscript_fixture.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

class ModelShippingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>();
    ASSERT_TRUE(fleet_->StartCoordinator());
    // Only ship-b allows local files, and only those under its models directory.
    fs::create_directories(fleet_->dir("local-models"));
    ASSERT_TRUE(fleet_->StartAgent("ship-a"));
    ASSERT_TRUE(fleet_->StartAgent("ship-b", {"--models-dir", fleet_->dir("local-models")}));
    ASSERT_TRUE(fleet_->WaitForAgents(2, 60s)) << fleet_->Logs();
    // The submitting machine's files: a directory no agent is told of.
    client_dir_ = fleet_->dir("client");
    fs::create_directories(client_dir_);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << fleet_->Logs();
  }

  // A sweep of the TorchScript model named by `model_args` on every agent.
  static json Sweep(const std::string& name, const json& model_args) {
    return {{"name", name},
            {"matrix", {{"model", "torchscript"}, {"batch_size", 2}}},
            {"models", {{"torchscript", model_args}}},
            {"timing", {{"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.2}}}};
  }

  // `benchfleet submit FILE --wait` as a user runs it; its exit code.
  int SubmitWithCli(const json& sweep, std::string* err) {
    const std::string file = client_dir_ + "/sweep.json";
    std::ofstream(file) << sweep.dump(2);
    std::string out;
    return RunCommand(
        {kCliBin, "--coordinator", fleet_->clients_endpoint(), "submit", file, "--wait"}, &out,
        err);
  }

  json Results(int64_t sweep_id) {
    // Each host's first job of the sweep: not the reruns a suspected regression (the
    // tiny model's timings are noisy) queues into the same sweep.
    const std::string sweep = std::to_string(sweep_id);
    return QueryRows(fleet_->db_path(),
                     "SELECT h.name AS host, r.ok, r.model_args, r.series, r.error FROM results r "
                     "JOIN hosts h USING (host_id) WHERE r.job_id IN (SELECT min(job_id) FROM "
                     "results WHERE sweep_id = " +
                         sweep + " GROUP BY host_id) ORDER BY h.name");
  }
  int64_t LastSweep() {
    return QueryValue(fleet_->db_path(), "SELECT max(sweep_id) FROM sweeps").get<int64_t>();
  }
  std::string CachedCopy(const std::string& agent, const std::string& sha256) {
    return fleet_->dir("agent-" + agent) + "/models/" + sha256;
  }

  std::unique_ptr<Fleet> fleet_;
  std::string client_dir_;
};

TEST_F(ModelShippingTest, AFileOnlyTheClientHasRunsEverywhereAndItsContentIsItsSeries) {
  const std::string model = client_dir_ + "/model.pt";
  ASSERT_TRUE(WriteTinyTorchScript(model, 0));
  auto v1 = Sha256OfFile(model);
  ASSERT_TRUE(v1.ok());
  // Named beside the sweep file, relative: the CLI resolves, hashes and uploads it.
  const json sweep = Sweep("shipped", {{"path", "model.pt"}, {"inputs", {{16}}}});
  std::string err;
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  EXPECT_NE(err.find("uploaded, sha256 " + v1->sha256), std::string::npos) << err;
  const int64_t first = LastSweep();
  json rows = Results(first);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  for (const json& row : rows) {
    EXPECT_EQ(row["ok"], 1) << row.dump();
    EXPECT_EQ(json::parse(row["model_args"].get<std::string>()),
              json({{"sha256", v1->sha256}, {"inputs", {{16}}}}))
        << row.dump();
  }
  // The coordinator holds the file by its hash; each agent fetched its own copy; no job
  // anywhere names the client's path.
  EXPECT_TRUE(fs::exists(fleet_->dir("models/" + v1->sha256)));
  EXPECT_TRUE(fs::exists(CachedCopy("ship-a", v1->sha256)));
  EXPECT_TRUE(fs::exists(CachedCopy("ship-b", v1->sha256)));
  EXPECT_EQ(QueryValue(fleet_->db_path(), "SELECT count(*) FROM jobs WHERE spec LIKE '%model.pt%'"),
            0);

  // A tampered cached copy is never run: ship-a fetches the model again, and the same
  // content continues the same series.
  std::ofstream(CachedCopy("ship-a", v1->sha256), std::ios::binary | std::ios::trunc) << "tampered";
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  EXPECT_NE(err.find("already stored"), std::string::npos) << err;
  const int64_t second = LastSweep();
  json again = Results(second);
  ASSERT_EQ(again.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again[i]["ok"], 1) << again[i].dump();
    EXPECT_EQ(again[i]["series"], rows[i]["series"]) << again[i].dump();
  }
  auto refetched = Sha256OfFile(CachedCopy("ship-a", v1->sha256));
  ASSERT_TRUE(refetched.ok());
  EXPECT_EQ(refetched->sha256, v1->sha256);
  EXPECT_NE(fleet_->Logs().find("no longer has the content it is named by"), std::string::npos);

  // The same path with other weights is another model: a new series on each host.
  ASSERT_TRUE(WriteTinyTorchScript(model, 1));
  auto v2 = Sha256OfFile(model);
  ASSERT_TRUE(v2.ok());
  ASSERT_NE(v2->sha256, v1->sha256);
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  json replaced = Results(LastSweep());
  ASSERT_EQ(replaced.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(replaced[i]["ok"], 1) << replaced[i].dump();
    EXPECT_NE(replaced[i]["series"], rows[i]["series"]);
    EXPECT_NE(replaced[i]["model_args"].get<std::string>().find(v2->sha256), std::string::npos);
  }
}

TEST_F(ModelShippingTest, AModelChangedUnderItsNameIsComparedByName) {
  const std::string model = client_dir_ + "/ranker.pt";
  ASSERT_TRUE(WriteTinyTorchScript(model, 0));
  json sweep = Sweep("ranker", {{"path", "ranker.pt"}, {"inputs", {{16}}}});
  std::string err;
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  const int64_t unnamed_before = LastSweep();
  sweep["models"]["torchscript"]["name"] = "ranker";
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  const int64_t before = LastSweep();
  // The file changes (other weights): another sha256, the same name.
  ASSERT_TRUE(WriteTinyTorchScript(model, 1));
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  const int64_t after = LastSweep();
  auto compare = [&](int64_t a, int64_t b, std::string* out) {
    std::string compare_err;
    const int code = RunCommand({kCliBin, "--coordinator", fleet_->clients_endpoint(), "compare",
                                 std::to_string(a), std::to_string(b), "--format", "json"},
                                out, &compare_err);
    if (code != 0) *out += compare_err;
    return code;
  };
  // Named on both sides: each host's configuration pairs by the name, and says so.
  std::string out;
  ASSERT_EQ(compare(before, after, &out), 0) << out;
  const json rows = json::parse(out, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << out;
  ASSERT_EQ(rows.size(), 2u) << out;  // one per host
  for (const json& row : rows) {
    EXPECT_NE(row.value("note", "").find("paired by name \"ranker\": its contents differ"),
              std::string::npos)
        << row.dump();
    EXPECT_GT(row["a_samples"].get<int64_t>(), 0) << row.dump();
    EXPECT_GT(row["b_samples"].get<int64_t>(), 0) << row.dump();
  }
  // Without a name on one side, two contents are two models: nothing in common (exit 2).
  EXPECT_EQ(compare(unnamed_before, after, &out), 2) << out;
  EXPECT_NE(out.find("no configuration in common"), std::string::npos) << out;
}

TEST_F(ModelShippingTest, ATeacherModelGoesByContentToo) {
  ASSERT_TRUE(WriteTinyTorchScript(client_dir_ + "/student.pt", 0));
  ASSERT_TRUE(WriteTinyTorchScript(client_dir_ + "/teacher.pt", 1));
  auto teacher = Sha256OfFile(client_dir_ + "/teacher.pt");
  ASSERT_TRUE(teacher.ok());
  json sweep = Sweep("distilled", {{"path", "student.pt"}, {"inputs", {{16}}}});
  sweep["matrix"]["reference"] = {
      {{"model", "torchscript"}, {"model_args", {{"path", "teacher.pt"}}}}};
  std::string err;
  ASSERT_EQ(SubmitWithCli(sweep, &err), 0) << err;
  json rows = QueryRows(fleet_->db_path(),
                        "SELECT h.name AS host, r.ok, j.spec, r.detail FROM results r JOIN jobs j "
                        "USING (job_id) JOIN hosts h USING (host_id) WHERE r.sweep_id = " +
                            std::to_string(LastSweep()));
  ASSERT_GE(rows.size(), 2u);
  for (const json& row : rows) {
    EXPECT_EQ(row["ok"], 1) << row.dump();
    const json spec = json::parse(row["spec"].get<std::string>());
    EXPECT_EQ(spec["reference"]["model_args"], json({{"sha256", teacher->sha256}})) << spec.dump();
    // The worker compared the student with the teacher it was given.
    EXPECT_NE(row["detail"].get<std::string>().find("\"reference\""), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(CachedCopy("ship-a", teacher->sha256)));
  EXPECT_TRUE(fs::exists(CachedCopy("ship-b", teacher->sha256)));
}

TEST_F(ModelShippingTest, PathsOnAnAgentsHostRunOnlyUnderTheDirectoryItAllows) {
  // A raw path sent straight to the coordinator (not through submit) is refused there.
  std::string error;
  auto raw = fleet_->client().Call(
      msg::kSubmit, {{"sweep", Sweep("raw", {{"path", "/etc/shadow"}, {"inputs", {{16}}}})}});
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("is a file on the submitting machine"), std::string::npos)
      << raw.status().ToString();
  // A hash the coordinator does not hold is refused too.
  auto unknown = fleet_->client().Call(
      msg::kSubmit,
      {{"sweep", Sweep("unknown", {{"sha256", Sha256Hex("never uploaded")}, {"inputs", {{16}}}})}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no model with sha256"), std::string::npos);

  // agent_path: ship-b runs the file under its --models-dir; ship-a, which allows none,
  // refuses it; neither reads a file outside (here /etc/shadow).
  const std::string local = fleet_->dir("local-models") + "/model.pt";
  ASSERT_TRUE(WriteTinyTorchScript(local));
  ASSERT_GE(fleet_->Submit(Sweep("local", {{"agent_path", local}, {"inputs", {{16}}}}), &error), 1)
      << error;
  json done = fleet_->WaitForSweep(LastSweep(), 120s);
  ASSERT_TRUE(done.is_object()) << fleet_->Logs();
  json rows = Results(LastSweep());
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["host"], "ship-a");
  EXPECT_EQ(rows[0]["ok"], 0);
  EXPECT_NE(rows[0]["error"].get<std::string>().find("--models-dir"), std::string::npos)
      << rows[0].dump();
  EXPECT_EQ(rows[1]["ok"], 1) << rows[1].dump();

  ASSERT_GE(
      fleet_->Submit(Sweep("shadow", {{"agent_path", "/etc/shadow"}, {"inputs", {{16}}}}), &error),
      1)
      << error;
  ASSERT_TRUE(fleet_->WaitForSweep(LastSweep(), 120s).is_object());
  for (const json& row : Results(LastSweep())) {
    EXPECT_EQ(row["ok"], 0) << row.dump();
    EXPECT_NE(row["error"].get<std::string>().find("--models-dir"), std::string::npos)
        << row.dump();
  }
}

}  // namespace
}  // namespace benchfleet::testing
