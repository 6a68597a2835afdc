// Agents that carry several workers, each built against another LibTorch
// (capabilities.workers), driven through the coordinator in process
// (coordinator_fixture.h): the `torch` and `technique` axes place each job only where a
// worker can run it, a value no worker of the fleet has is refused at submit naming the
// versions the fleet has, and a result is of its worker's series.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "coordinator/coordinator.h"
#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;

json Worker(const std::string& version, const json& techniques) {
  return {{"torch_version", version}, {"blas", "mkl"}, {"techniques", techniques}};
}

class WorkerPlacementTest : public CoordinatorTest {
 protected:
  // An agent of two workers: LibTorch 2.15 (which compiles) first, Debian's 1.13 second.
  void RegisterTwoWorkers(const std::string& name) {
    json capabilities = testing_fixture::Capabilities(0, name);
    capabilities["torch"] = Worker("2.15.0", {"eager", "torchscript", "aoti"});
    capabilities["workers"] = {Worker("2.15.0", {"eager", "torchscript", "aoti"}),
                               Worker("1.13.0", {"eager"})};
    FromAgent(name + "/1", {{"v", 1},
                            {"type", "register"},
                            {"agent", name},
                            {"tags", json::array()},
                            {"capabilities", capabilities}});
  }

  // Every offer sent so far to `peer`: its spec's torch ("" when it names none).
  std::multiset<std::string> TorchOfOffers(const std::string& peer) {
    std::multiset<std::string> out;
    for (const json& offer : OffersTo(peer)) out.insert(offer["spec"].value("torch", ""));
    return out;
  }
};

TEST_F(WorkerPlacementTest, ATorchAxisRunsEachVersionOnlyWhereAWorkerOfItIs) {
  RegisterTwoWorkers("two-torches");
  Register("old-only");  // the fixture's agents carry 1.13.0 alone
  const int64_t sweep = Submit(json::parse(R"({"name": "upgrade", "placement": "each",
      "matrix": {"model": "mlp", "batch_size": 4, "torch": ["2.15", "1.13"]}})"));
  ASSERT_GT(sweep, 0);
  // 2.15 runs on the agent that has it; 1.13 on both.
  json planned = Query("SELECT jobs_planned FROM sweeps WHERE sweep_id = " + std::to_string(sweep));
  EXPECT_EQ(planned[0][0], 3);
  for (int i = 0; i < 6; ++i) {
    coordinator_->Tick();
    for (const std::string peer : {"two-torches/1", "old-only/1"}) {
      for (const json& offer : OffersTo(peer)) {
        // The offer's needs say which worker: the agent runs it there.
        EXPECT_EQ(offer["needs"].value("torch", ""), offer["spec"].value("torch", ""));
        FromAgent(peer, {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", GoodResult(offer["spec"])}});
      }
    }
  }
  EXPECT_EQ(TorchOfOffers("two-torches/1"), (std::multiset<std::string>{"1.13", "2.15"}));
  EXPECT_EQ(TorchOfOffers("old-only/1"), (std::multiset<std::string>{"1.13"}));
}

TEST_F(WorkerPlacementTest, ATorchNoAgentHasIsRefusedNamingTheVersionsTheFleetHas) {
  RegisterTwoWorkers("two-torches");
  for (const char* placement : {"each", "any"}) {
    Message refused = Request(
        {{"type", "submit"},
         {"sweep",
          {{"name", "nope"},
           {"placement", placement},
           {"matrix", {{"model", "mlp"}, {"batch_size", 4}, {"torch", {"2.15", "2.9"}}}}}}});
    ASSERT_EQ(refused.type, "error") << refused.body.dump();
    const std::string message = refused.body.value("message", "");
    EXPECT_NE(message.find("matrix.torch[1]: no agent has a worker of torch 2.9"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("1.13.0, 2.15.0"), std::string::npos) << message;
  }
  // A prefix matches whole components only: "2.1" is not 2.15.
  Message partial =
      Request({{"type", "submit"},
               {"sweep",
                {{"name", "p"},
                 {"placement", "any"},
                 {"matrix", {{"model", "mlp"}, {"batch_size", 4}, {"torch", "2.1"}}}}}});
  EXPECT_EQ(partial.type, "error") << partial.body.dump();
}

TEST_F(WorkerPlacementTest, ATechniqueGoesOnlyToAWorkerThatRunsIt) {
  RegisterTwoWorkers("two-torches");
  // aoti on 1.13: no worker of the fleet runs it.
  Message refused =
      Request({{"type", "submit"}, {"sweep", json::parse(R"({"name": "t", "placement": "any",
           "matrix": {"model": "mlp", "batch_size": 4, "technique": ["eager", "aoti"], "torch": "1.13"}})")}});
  ASSERT_EQ(refused.type, "error");
  EXPECT_NE(refused.body.value("message", "")
                .find("matrix.technique[1]: no agent has a worker of torch 1.13 "
                      "that runs technique aoti"),
            std::string::npos)
      << refused.body.dump();
  // Without the torch: the 2.15 worker takes it.
  Submit(json::parse(R"({"name": "t", "placement": "any",
                         "matrix": {"model": "mlp", "batch_size": 4, "technique": "aoti"}})"));
  coordinator_->Tick();
  const std::vector<json> offers = OffersTo("two-torches/1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]["needs"]["technique"], "aoti");
}

TEST_F(WorkerPlacementTest, AResultIsOfTheSeriesOfTheWorkerThatRanIt) {
  RegisterTwoWorkers("two-torches");
  Submit(json::parse(R"({"name": "s", "placement": "any",
                         "matrix": {"model": "mlp", "batch_size": 4, "torch": ["2.15", "1.13"]}})"));
  for (int i = 0; i < 4; ++i) {
    coordinator_->Tick();
    if (const Sent* last = LastTo("two-torches/1", "job")) {
      const json offer = last->message.body;
      if (Query("SELECT count(*) FROM results WHERE job_id = " + offer["job_id"].dump())[0][0] ==
          0) {
        json result = GoodResult(offer["spec"]);
        result["runtime"] = {
            {"torch_version", offer["spec"]["torch"] == "2.15" ? "2.15.0" : "1.13.0"}};
        FromAgent("two-torches/1", {{"v", 1},
                                    {"type", "result"},
                                    {"job_id", offer["job_id"]},
                                    {"attempt", offer["attempt"]},
                                    {"result", result}});
      }
    }
  }
  const json rows = Query(
      "SELECT r.torch_version, r.fingerprint, h.fingerprint FROM results r "
      "JOIN hosts h USING (host_id) ORDER BY r.torch_version");
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0][0], "1.13.0");
  EXPECT_EQ(rows[1][0], "2.15.0");
  // The first worker's results are of the host's own fingerprint; the second's of one
  // with its LibTorch in it.
  EXPECT_EQ(rows[1][1], rows[1][2]);
  EXPECT_NE(rows[0][1], rows[0][2]);
  // Side by side, 1.13 the baseline.
  const json side = Query("SELECT base_torch, torch, speedup FROM torch_comparison");
  ASSERT_EQ(side.size(), 1u) << side.dump();
  EXPECT_EQ(side[0][0], "1.13.0");
  EXPECT_EQ(side[0][1], "2.15.0");
  EXPECT_DOUBLE_EQ(side[0][2].get<double>(), 1.0);
}

}  // namespace
}  // namespace benchfleet
