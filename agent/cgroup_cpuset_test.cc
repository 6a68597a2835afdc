// The cgroup cpuset found from /proc/self/cgroup and mountinfo texts, over cgroup trees
// written in a temporary directory as the kernel lays them out (v1, v2, hybrid, a
// container's sub-tree mount), and this process's own.
#include "agent/cgroup_cpuset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/cpu_list.h"

namespace benchfleet {
namespace {

class CgroupCpusetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-cgroup-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` to the file at `relative` under the test's directory.
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  // A mountinfo line mounting a hierarchy of `fs_type` (root `root`) at `relative`.
  std::string Mount(const std::string& relative, const std::string& fs_type,
                    const std::string& super_options, const std::string& root = "/") {
    return "30 25 0:26 " + root + " " + (dir_ / relative).string() + " rw,nosuid shared:4 - " +
           fs_type + " " + fs_type + " " + super_options + "\n";
  }
  std::string Path(const std::string& relative) { return (dir_ / relative).string(); }

  std::filesystem::path dir_;
};

TEST_F(CgroupCpusetTest, CgroupV1ReadsTheJobsOwnCpuset) {
  Write("cpuset/cpuset.effective_cpus", "0-7\n");
  Write("cpuset/slurm/uid_0/job_12/cpuset.effective_cpus", "2-3\n");
  const std::string mountinfo = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" +
                                Mount("cpuset", "cgroup", "rw,cpuset") +
                                Mount("memory", "cgroup", "rw,memory");
  auto cpuset = ReadCgroupCpuset(
      "4:memory:/slurm/uid_0/job_12\n3:cpuset:/slurm/uid_0/job_12\n0::/\n", mountinfo);
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_EQ((*cpuset)->cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ((*cpuset)->file, Path("cpuset/slurm/uid_0/job_12/cpuset.effective_cpus"));
}

// v2: the controller is enabled on some levels only; the nearest ancestor that has it
// bounds the process.
TEST_F(CgroupCpusetTest, CgroupV2ReadsTheNearestAncestorWithTheController) {
  Write("unified/cpuset.cpus.effective", "0-15\n");
  Write("unified/system.slice/slurmstepd.scope/cpuset.cpus.effective", "4,6\n");
  std::filesystem::create_directories(dir_ /
                                      "unified/system.slice/slurmstepd.scope/job_7/step_batch");
  auto cpuset = ReadCgroupCpuset("0::/system.slice/slurmstepd.scope/job_7/step_batch\n",
                                 Mount("unified", "cgroup2", "rw,nsdelegate"));
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_EQ((*cpuset)->cpus, (std::vector<int>{4, 6}));
}

// Hybrid (v1 controllers, a v2 tree with none): the cpuset is v1's.
TEST_F(CgroupCpusetTest, HybridHierarchiesUseTheV1Cpuset) {
  Write("cpuset/cpuset.cpus", "0-1\n");  // an older kernel's name
  Write("unified/cgroup.controllers", "\n");
  auto cpuset = ReadCgroupCpuset("3:cpuset:/\n0::/\n", Mount("cpuset", "cgroup", "rw,cpuset") +
                                                           Mount("unified", "cgroup2", "rw"));
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_EQ((*cpuset)->cpus, (std::vector<int>{0, 1}));
}

// A container without a cgroup namespace mounts its own sub-tree: the paths below its
// root are under the mount point.
TEST_F(CgroupCpusetTest, ASubTreeMountHoldsThePathsBelowItsRoot) {
  Write("cg/cpuset.cpus.effective", "1\n");
  auto cpuset = ReadCgroupCpuset("0::/docker/abc\n", Mount("cg", "cgroup2", "rw", "/docker/abc"));
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_EQ((*cpuset)->cpus, (std::vector<int>{1}));
}

TEST_F(CgroupCpusetTest, NoCpusetMountedIsNone) {
  Write("unified/cgroup.controllers", "memory pids\n");
  auto cpuset = ReadCgroupCpuset("0::/\n", Mount("unified", "cgroup2", "rw"));
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  EXPECT_FALSE(cpuset->has_value());
  auto nothing = ReadCgroupCpuset("", "");
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->has_value());
}

TEST_F(CgroupCpusetTest, AnEmptyCpusetHasNoCpus) {
  Write("cpuset/job/cpuset.effective_cpus", "\n");
  auto cpuset = ReadCgroupCpuset("3:cpuset:/job\n", Mount("cpuset", "cgroup", "rw,cpuset"));
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_TRUE((*cpuset)->cpus.empty());
}

TEST_F(CgroupCpusetTest, AMalformedCpusetIsAnErrorNamingTheFile) {
  Write("cpuset/cpuset.effective_cpus", "0-x\n");
  auto cpuset = ReadCgroupCpuset("3:cpuset:/\n", Mount("cpuset", "cgroup", "rw,cpuset"));
  ASSERT_FALSE(cpuset.ok());
  EXPECT_NE(cpuset.status().message().find(Path("cpuset/cpuset.effective_cpus")), std::string::npos)
      << cpuset.status().message();
}

TEST_F(CgroupCpusetTest, MountPointsWithSpacesAreUnescaped) {
  Write("with space/cpuset.cpus.effective", "3\n");
  std::string line = Mount("with space", "cgroup2", "rw");
  line.replace(line.find("with space"), 10, "with\\040space");
  auto cpuset = ReadCgroupCpuset("0::/\n", line);
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  ASSERT_TRUE(cpuset->has_value());
  EXPECT_EQ((*cpuset)->cpus, (std::vector<int>{3}));
}

// This process: whatever confines it, its affinity is within its cpuset.
TEST_F(CgroupCpusetTest, ThisProcessesAffinityIsWithinItsCpuset) {
  auto cpuset = ReadOwnCgroupCpuset();
  ASSERT_TRUE(cpuset.ok()) << cpuset.status().message();
  if (!cpuset->has_value()) GTEST_SKIP() << "no cpuset is mounted for this process";
  for (int cpu : AllowedCpus()) {
    EXPECT_TRUE(std::find((*cpuset)->cpus.begin(), (*cpuset)->cpus.end(), cpu) !=
                (*cpuset)->cpus.end())
        << "CPU " << cpu << " of the affinity is not in " << (*cpuset)->file;
  }
}

}  // namespace
}  // namespace benchfleet
