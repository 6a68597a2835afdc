#include "common/job_needs.h"

#include <gtest/gtest.h>

#include <string>

#include "common/sweep.h"

namespace benchfleet {
namespace {

using json = nlohmann::json;

json Job(const json& patch) {
  json job = {{"model", "mlp"},  {"mode", "train"},  {"dtype", "fp32"},
              {"device", "cpu"}, {"batch_size", 12}, {"threads", 2}};
  job.merge_patch(patch);
  return job;
}

JobNeeds Needs(const json& patch) {
  auto needs = NeedsOfJobJson(Job(patch));
  EXPECT_TRUE(needs.ok()) << needs.status().message();
  return needs.ok() ? *needs : JobNeeds{};
}

TEST(JobNeedsTest, EachKindOfJobAsksForWhatItRuns) {
  // One process: nothing beyond its own threads.
  EXPECT_EQ(Needs(json::object()), JobNeeds{});
  EXPECT_EQ(Needs(json::object()).Agents(), 1);
  // A gang on one agent: its ranks there, a CPU per thread of each.
  const JobNeeds local = Needs({{"parallel", {{"kind", "data"}, {"world_size", 3}}}});
  EXPECT_EQ(local.world_size, 3);
  EXPECT_FALSE(local.spread);
  EXPECT_EQ(local.local_processes, 3);
  EXPECT_FALSE(local.replicated);
  EXPECT_EQ(local.local_cpus, 6);
  EXPECT_EQ(local.Agents(), 1);
  // The same gang spread: one process on each of 3 agents.
  const JobNeeds spread =
      Needs({{"placement", "spread"}, {"parallel", {{"kind", "data"}, {"world_size", 3}}}});
  EXPECT_TRUE(spread.spread);
  EXPECT_EQ(spread.local_processes, 1);
  EXPECT_EQ(spread.local_cpus, 0);
  EXPECT_EQ(spread.Agents(), 3);
  // Replicas share one agent even in a spread sweep.
  const JobNeeds replicas =
      Needs({{"mode", "inference"}, {"placement", "spread"}, {"replicas", 4}});
  EXPECT_FALSE(replicas.spread);
  EXPECT_TRUE(replicas.replicated);
  EXPECT_EQ(replicas.world_size, 1);
  EXPECT_EQ(replicas.local_processes, 4);
  EXPECT_EQ(replicas.local_cpus, 8);
  // A pipeline: its stages are its ranks; in one process its stages are GPUs.
  EXPECT_EQ(Needs({{"model_args", {{"layers", {64, 64, 64, 10}}}},
                   {"parallel", {{"kind", "pipeline"}, {"stages", 2}}}})
                .local_processes,
            2);
  const JobNeeds in_process =
      Needs({{"model_args", {{"layers", {64, 64, 64, 10}}}},
             {"device", "cuda"},
             {"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"in_process", true}}}});
  EXPECT_EQ(in_process, JobNeeds{});
}

TEST(JobNeedsTest, ARankThatNamesItsWorldIsOneProcess) {
  JobSpecError error;
  auto rank = ParseJobConfig(Job({{"placement", "spread"},
                                  {"parallel", {{"kind", "data"}, {"world_size", 2}}},
                                  {"distributed",
                                   {{"rank", 1},
                                    {"world_size", 2},
                                    {"store", "10.0.0.1:4000"},
                                    {"address", "10.0.0.2"}}}}),
                             &error);
  ASSERT_TRUE(rank) << error.message;
  const JobNeeds needs = NeedsOf(*rank);
  EXPECT_EQ(needs.world_size, 2);
  EXPECT_FALSE(needs.spread);
  EXPECT_EQ(needs.local_processes, 1);
  EXPECT_EQ(needs.local_cpus, 0);
}

TEST(JobNeedsTest, AJobThatAsksForSeveralProcessesIsCheckedAndOthersAreNotParsed) {
  // A spec that fails its check says where, once it asks for more than one process.
  auto bad = NeedsOfJobJson(Job({{"replicas", "two"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("replicas: ", 0), 0u) << bad.status().message();
  EXPECT_FALSE(NeedsOfJobJson(json::array()).ok());
  // A calibration's spec is one process.
  EXPECT_EQ(NeedsOfJobJson({{"kind", "calibration"}}).value(), JobNeeds{});
  // placement must be one of the sweep's.
  JobSpecError error;
  EXPECT_FALSE(ParseJobConfig(Job({{"placement", "everywhere"}}), &error));
  EXPECT_EQ(error.field, "placement");
}

TEST(JobNeedsTest, ASweepComputesTheNeedsOfEachJobItExpands) {
  auto sweep = ParseSweep(json::parse(R"({"name": "g", "placement": "spread",
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 8, "threads": 1,
                 "parallel": [{"kind": "data", "world_size": 2}, null]}})"));
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  const auto combinations = sweep->Combinations();
  ASSERT_EQ(combinations.size(), 2u);
  EXPECT_EQ(combinations[0].needs.Agents(), 2);
  EXPECT_EQ(combinations[1].needs, JobNeeds{});
}

TEST(JobNeedsTest, RoundTripsAndRefusesNeedsThatCannotBe) {
  JobNeeds local;
  local.world_size = 4;
  local.local_processes = 4;
  local.local_cpus = 8;
  for (const JobNeeds& needs : {JobNeeds{}, local}) {
    auto back = JobNeeds::FromJson(needs.ToJson(), "job.needs");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, needs);
  }
  struct Case {
    json patch;
    std::string starts;
  };
  for (const Case& c : std::vector<Case>{
           {{{"world_size", 0}}, "job.needs.world_size: must be an integer in [1, 4096]"},
           {{{"world_size", 5000}}, "job.needs.world_size: must be an integer in [1, 4096]"},
           {{{"spread", 1}}, "job.needs.spread: must be true or false"},
           {{{"local_processes", nullptr}}, "job.needs.local_processes: missing"},
           {{{"local_processes", 3}}, "job.needs.local_processes: a gang on one agent runs"},
           {{{"local_cpus", 0}}, "job.needs.local_cpus: must be > 0 exactly when"},
           {{{"spread", true}}, "job.needs: a spread gang has"},
       }) {
    json body = local.ToJson();
    body.merge_patch(c.patch);
    auto parsed = JobNeeds::FromJson(body, "job.needs");
    ASSERT_FALSE(parsed.ok()) << c.patch.dump();
    EXPECT_EQ(parsed.status().message().rfind(c.starts, 0), 0u) << parsed.status().message();
  }
  EXPECT_FALSE(JobNeeds::FromJson(json::array(), "job.needs").ok());
}

TEST(JobNeedsTest, WhatAJobAsksOfTheWorkerTravelsWithItsNeeds) {
  const JobNeeds plain = Needs({{"mode", "inference"}});
  EXPECT_TRUE(plain.worker.empty());
  EXPECT_FALSE(plain.ToJson().contains("torch"));  // an offer as before
  const JobNeeds versioned =
      Needs({{"mode", "inference"}, {"torch", "1.13"}, {"technique", "torchscript"}});
  EXPECT_EQ(versioned.worker.torch, "1.13");
  EXPECT_EQ(versioned.worker.technique, "torchscript");
  EXPECT_EQ(versioned.worker.Describe(), "torch 1.13, technique torchscript");
  // eager asks nothing; a package asks for a worker that loads packages.
  EXPECT_TRUE(Needs({{"mode", "inference"}, {"technique", "eager"}}).worker.empty());
  EXPECT_EQ(Needs({{"mode", "inference"},
                   {"model", "aoti"},
                   {"model_args", {{"sha256", std::string(64, 'b')}, {"inputs", {{12}}}}}})
                .worker.technique,
            "aoti");
  // A gang's needs are parsed whole, with the worker's.
  EXPECT_EQ(
      Needs({{"parallel", {{"kind", "data"}, {"world_size", 2}}}, {"torch", "2.15"}}).worker.torch,
      "2.15");

  JobNeeds with_min = versioned;
  with_min.worker.torch_min = "2.15.0";
  auto read = JobNeeds::FromJson(with_min.ToJson(), "job.needs");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, with_min);
  json bad = with_min.ToJson();
  bad["technique"] = "inductor";
  EXPECT_EQ(
      JobNeeds::FromJson(bad, "job.needs").status().message(),
      "job.needs.technique: must be one of eager, torchscript, aoti, cuda_graph, got \"inductor\"");
  bad = with_min.ToJson();
  bad["torch"] = 2;
  EXPECT_FALSE(JobNeeds::FromJson(bad, "job.needs").ok());
}

}  // namespace
}  // namespace benchfleet
