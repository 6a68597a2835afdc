#include "agent/thread_placement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

// A host as sysfs describes it: two NUMA nodes of one package each, two cores per node,
// two hardware threads per core, numbered as Linux numbers x86 siblings (cpu N and N+4
// share a core).
class ThreadPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("benchfleet-placement-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  CpuTopology TwoNodesWithSmt() {
    for (int cpu = 0; cpu < 8; ++cpu) {
      const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      Write(dir + "core_id", std::to_string(cpu % 4 % 2));
      Write(dir + "physical_package_id", std::to_string(cpu % 4 / 2));
    }
    Write("sys/devices/system/node/node0/cpulist", "0-1,4-5");
    Write("sys/devices/system/node/node1/cpulist", "2-3,6-7");
    return ReadCpuTopology({0, 1, 2, 3, 4, 5, 6, 7}, root_.string());
  }
  std::filesystem::path root_;
};

TEST_F(ThreadPlacementTest, EachPolicyPutsTheThreadsWhereItSays) {
  const CpuTopology topology = TwoNodesWithSmt();
  EXPECT_EQ(topology.Shape().cores, 4);
  auto place = [&](int threads, const std::string& policy) {
    auto placed = PlaceThreads(topology, threads, policy);
    EXPECT_TRUE(placed.ok()) << policy << ": " << placed.status().message();
    return placed.ok() ? *placed : ThreadPlacement{};
  };
  // cores: one per core, in the agent's order, a core's sibling only once each has one.
  ThreadPlacement p = place(2, "cores");
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.cores, 2);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_FALSE(p.smt_shared);
  EXPECT_EQ(place(6, "cores").cpus, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // spread: cores from each node in turn.
  p = place(2, "spread");
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(place(4, "spread").cpus, (std::vector<int>{0, 2, 1, 3}));
  // smt: both hardware threads of a core before the next core.
  p = place(2, "smt");
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 4}));
  EXPECT_EQ(p.cores, 1);
  EXPECT_TRUE(p.smt_shared);
  // node: one NUMA node, its cores first.
  p = place(3, "node");
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(p.nodes, 1);
  // os: every CPU, the kernel places them.
  p = place(2, "os");
  EXPECT_EQ(p.cpus.size(), 8u);
  EXPECT_EQ(
      p.ToJson(),
      nlohmann::json(
          {{"policy", "os"}, {"cpus", "0-7"}, {"cores", 4}, {"nodes", 2}, {"smt_shared", true}}));
}

TEST_F(ThreadPlacementTest, APlacementTheAgentCannotGiveIsRefusedWithWhy) {
  const CpuTopology topology = TwoNodesWithSmt();
  auto spread = PlaceThreads(topology, 5, "spread");
  ASSERT_FALSE(spread.ok());
  EXPECT_EQ(spread.status().message(),
            "thread_placement \"spread\": one thread per core needs 5 cores; the agent has 8 CPUs "
            "on 4 cores, "
            "2 hardware threads a core, 4 in the largest NUMA node");
  // What register sends the coordinator, which refuses a sweep at submit by the same rule.
  EXPECT_EQ(topology.Shape(), (CpuShape{8, 4, 2, 4}));
  EXPECT_EQ(PlacementRefusal(topology.Shape(), 5, "spread"), spread.status().message());
  auto node = PlaceThreads(topology, 5, "node");
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("5 threads need a NUMA node of as many CPUs"),
            std::string::npos)
      << node.status().message();
  EXPECT_EQ(PlaceThreads(topology, 9, "smt")->cpus.size(), 8u);  // oversubscribed: every CPU
  EXPECT_FALSE(PlaceThreads(topology, 1, "compact").ok());
  // A host without SMT (or a VM whose files say nothing: each CPU its own core).
  const CpuTopology bare = ReadCpuTopology({0, 1}, root_.string() + "/none");
  EXPECT_EQ(bare.Shape().cores, 2);
  auto smt = PlaceThreads(bare, 2, "smt");
  ASSERT_FALSE(smt.ok());
  EXPECT_NE(smt.status().message().find("no core has two hardware threads (no SMT)"),
            std::string::npos);
  EXPECT_TRUE(PlaceThreads(bare, 2, "spread").ok());
  // More threads than CPUs stays an oversubscription measurement by default.
  auto over = PlaceThreads(bare, 4, "cores");
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->cpus, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace benchfleet
