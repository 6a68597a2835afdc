// What the agent takes as its own: the CPUs its affinity and cpuset allow and, inside a
// Slurm job, the job's allocation, over environments and CPU sets as Slurm and the
// kernel give them; every disagreement that cannot be resolved is an error that says
// what to do.
#include "agent/allocation.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

AllocationSources Sources(std::map<std::string, std::string> env, std::vector<int> affinity,
                          std::optional<std::vector<int>> cpuset = std::nullopt) {
  AllocationSources sources;
  sources.env = std::move(env);
  sources.affinity = std::move(affinity);
  if (cpuset) sources.cpuset = CgroupCpuset{*cpuset, "/sys/fs/cgroup/job/cpuset.cpus.effective"};
  return sources;
}

std::string ErrorOf(const StatusOr<AgentResources>& resources) {
  EXPECT_FALSE(resources.ok());
  return resources.ok() ? "" : resources.status().message();
}

#define EXPECT_CONTAINS(text, part)               \
  EXPECT_NE((text).find(part), std::string::npos) \
      << "\"" << (text) << "\" lacks \"" << (part) << "\""

TEST(AllocationTest, OutsideSlurmEveryCpuOfTheAffinityAndCpuset) {
  auto resources = ResolveResources(Sources({}, {0, 1, 2, 3}, {{1, 2, 3, 4}}), "");
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(resources->cpus, (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(resources->slurm.has_value());
  auto flagged = ResolveResources(Sources({}, {0, 1, 2, 3}), "2-3");
  ASSERT_TRUE(flagged.ok()) << flagged.status().message();
  EXPECT_EQ(flagged->cpus, (std::vector<int>{2, 3}));
}

TEST(AllocationTest, ASlurmJobBoundToItsCpusTakesThem) {
  auto resources = ResolveResources(
      Sources({{"SLURM_JOB_ID", "12"}, {"SLURM_CPUS_ON_NODE", "2"}}, {2, 3}, {{0, 1, 2, 3}}), "");
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(resources->cpus, (std::vector<int>{2, 3}));
  ASSERT_TRUE(resources->slurm.has_value());
  EXPECT_EQ(resources->slurm->job_id, "12");
  EXPECT_EQ(resources->slurm->cpus_on_node, 2);
  // No GPU allocated: jobs see none.
  EXPECT_EQ(resources->slurm->visible_gpus, "");
  EXPECT_EQ(resources->slurm->Describe(),
            "Slurm job 12: 2 CPUs allocated on this node, jobs run on CPUs 2-3; GPUs: none (no "
            "GPU allocated)");
  auto one = ResolveResources(
      Sources({{"SLURM_JOB_ID", "13"}, {"SLURM_JOB_CPUS_PER_NODE", "1"}}, {1}, {{0, 1}}), "");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->slurm->Describe(),
            "Slurm job 13: 1 CPU allocated on this node, jobs run on CPU 1; GPUs: none (no GPU "
            "allocated)");
}

// Without SLURM_CPUS_ON_NODE, SLURM_JOB_CPUS_PER_NODE says it when every node has the same.
TEST(AllocationTest, JobCpusPerNodeServesWhenUniform) {
  auto resources = ResolveResources(
      Sources({{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_CPUS_PER_NODE", "2(x3)"}}, {0, 1}), "");
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(resources->slurm->cpus_on_node, 2);
  EXPECT_CONTAINS(
      ErrorOf(ResolveResources(
          Sources({{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_CPUS_PER_NODE", "4(x2),2"}}, {0, 1}), "")),
      "SLURM_JOB_CPUS_PER_NODE \"4(x2),2\" does not say how many CPUs this node has");
  EXPECT_CONTAINS(ErrorOf(ResolveResources(Sources({{"SLURM_JOB_ID", "5"}}, {0, 1}), "")),
                  "neither SLURM_CPUS_ON_NODE nor SLURM_JOB_CPUS_PER_NODE is set");
  EXPECT_CONTAINS(ErrorOf(ResolveResources(
                      Sources({{"SLURM_JOB_ID", "5"}, {"SLURM_CPUS_ON_NODE", "two"}}, {0}), "")),
                  "SLURM_CPUS_ON_NODE \"two\" is not a count of CPUs");
}

// Not bound to its CPUs (TaskPlugin=task/none): which of the node's are the job's
// cannot be told, so the agent does not start.
TEST(AllocationTest, AJobNotBoundToItsCpusIsRefused) {
  const std::string error = ErrorOf(ResolveResources(
      Sources({{"SLURM_JOB_ID", "7"}, {"SLURM_CPUS_ON_NODE", "1"}}, {0, 1, 2, 3}), ""));
  EXPECT_CONTAINS(error,
                  "Slurm job 7 was allocated 1 CPU on this node, but this process may "
                  "run on 4 CPUs (affinity 0-3)");
  EXPECT_CONTAINS(error, "TaskPlugin=task/affinity or task/cgroup");
}

// Fewer usable than allocated (a step bound to part of it): those, said in the log.
TEST(AllocationTest, FewerUsableThanAllocatedAreUsedWithAWarning) {
  auto resources = ResolveResources(
      Sources({{"SLURM_JOB_ID", "7"}, {"SLURM_CPUS_ON_NODE", "4"}}, {0, 1, 2, 3}, {{2, 3}}), "");
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(resources->cpus, (std::vector<int>{2, 3}));
  EXPECT_CONTAINS(resources->slurm->Describe(),
                  "this process may run on 2 CPUs of the 4 allocated");
}

// The bad input of an allocation: no CPU the agent can use.
TEST(AllocationTest, NoUsableCpuIsRefused) {
  EXPECT_CONTAINS(
      ErrorOf(ResolveResources(
          Sources({{"SLURM_JOB_ID", "3"}, {"SLURM_CPUS_ON_NODE", "1"}}, {0}, {{1}}), "")),
      "no CPU this process may run on: affinity 0, cpuset 1 "
      "(/sys/fs/cgroup/job/cpuset.cpus.effective) have none in common");
  EXPECT_CONTAINS(ErrorOf(ResolveResources(
                      Sources({{"SLURM_JOB_ID", "3"}, {"SLURM_CPUS_ON_NODE", "0"}}, {0}), "")),
                  "Slurm job 3 has no CPU allocated on this node (SLURM_CPUS_ON_NODE=0)");
  EXPECT_CONTAINS(
      ErrorOf(ResolveResources(Sources({{"SLURM_JOB_ID", "3"}, {"SLURM_CPUS_ON_NODE", "1"}}, {0}),
                               "1")),
      "--cpus 1: CPU 1 is not among Slurm job 3's CPUs on this node (0); the agent may not use it");
}

TEST(AllocationTest, CpusFlagWithinTheAllocationNarrowsIt) {
  auto resources = ResolveResources(
      Sources({{"SLURM_JOB_ID", "3"}, {"SLURM_CPUS_ON_NODE", "4"}}, {4, 5, 6, 7}), "5,7");
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(resources->cpus, (std::vector<int>{5, 7}));
  EXPECT_CONTAINS(ErrorOf(ResolveResources(Sources({}, {0, 1}), "0-")), "--cpus: cpu list");
  EXPECT_CONTAINS(ErrorOf(ResolveResources(Sources({}, {0, 1}), "2")),
                  "--cpus 2: CPU 2 is not among the CPUs this process may run on (affinity 0-1)");
}

TEST(AllocationTest, GpusComeFromSlurm) {
  const std::map<std::string, std::string> base = {{"SLURM_JOB_ID", "9"},
                                                   {"SLURM_CPUS_ON_NODE", "1"}};
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(base.begin(), base.end());
    return ResolveResources(Sources(more, {0}), "");
  };
  // As Slurm's gres/gpu sets them: CUDA_VISIBLE_DEVICES kept.
  auto set = with(
      {{"SLURM_JOB_GPUS", "2,3"}, {"SLURM_GPUS_ON_NODE", "2"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->slurm->visible_gpus, "0,1");
  EXPECT_EQ(set->slurm->gpus_from, "CUDA_VISIBLE_DEVICES");
  // Unset: the allocated list, a step's before the job's.
  auto unset = with({{"SLURM_JOB_GPUS", "2,3"}, {"SLURM_STEP_GPUS", "3"}});
  ASSERT_TRUE(unset.ok()) << unset.status().message();
  EXPECT_EQ(unset->slurm->visible_gpus, "3");
  EXPECT_EQ(unset->slurm->gpus_from, "SLURM_STEP_GPUS");
  // More visible than allocated: another job's GPUs.
  EXPECT_CONTAINS(ErrorOf(with({{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}})),
                  "Slurm job 9 was allocated 0 GPUs on this node, but "
                  "CUDA_VISIBLE_DEVICES=\"0,1,2,3\" shows 4 GPUs");
  EXPECT_CONTAINS(ErrorOf(with({{"SLURM_GPUS_ON_NODE", "2"}})),
                  "SLURM_GPUS_ON_NODE says 2 GPUs but neither CUDA_VISIBLE_DEVICES");
  // Fewer: those, with a warning.
  auto fewer = with({{"SLURM_JOB_GPUS", "0,1"}, {"CUDA_VISIBLE_DEVICES", "1"}});
  ASSERT_TRUE(fewer.ok()) << fewer.status().message();
  EXPECT_CONTAINS(fewer->slurm->Describe(), "CUDA_VISIBLE_DEVICES shows 1 GPU of the 2 allocated");
}

}  // namespace
}  // namespace benchfleet
