// The host check before timing, on fake /proc and /sys trees: what a bare VM says
// ("unknown", never "ok"), a tuned host ("ok"), the warnings, and what makes a host busy.
#include "agent/host_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

class HostCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("bf-host-check-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  // /proc/stat with the host's and each CPU's busy and idle ticks (USER_HZ 100) and steal.
  static std::string Stat(int64_t busy0, int64_t busy1, int64_t idle, int64_t steal = 0) {
    auto line = [](const std::string& name, int64_t busy, int64_t idle_ticks, int64_t steal_ticks) {
      return name + " " + std::to_string(busy) + " 0 0 " + std::to_string(idle_ticks) + " 0 0 0 " +
             std::to_string(steal_ticks) + " 0 0\n";
    };
    return line("cpu", busy0 + busy1, 2 * idle, steal) + line("cpu0", busy0, idle, steal) +
           line("cpu1", busy1, idle, 0) + "intr 1\n";
  }
  HostReading Reading(const std::string& stat) {
    Write("proc/stat", stat);
    return HostChecker(root_.string()).Read();
  }
  void TunedHost() {
    for (int cpu : {0, 1}) {
      const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu);
      Write(dir + "/cpufreq/scaling_governor", "performance");
      Write(dir + "/thermal_throttle/core_throttle_count", "0");
      Write(dir + "/thermal_throttle/package_throttle_count", "0");
      Write(dir + "/topology/thread_siblings_list", "0-1");
    }
    Write("sys/devices/system/cpu/cpufreq/boost", "0");
  }
  std::filesystem::path root_;
};

TEST_F(HostCheckTest, AVirtualMachineWithoutTheFilesIsUnknownNeverOk) {
  const HostReading before = Reading(Stat(1000, 1000, 5000));
  const HostReading after = Reading(Stat(1000, 1000, 5020));  // idle for 0.2 s
  const HostCheck check = HostChecker(root_.string()).Judge(before, after, 0.2, {0});
  EXPECT_EQ(check.state, "unknown");
  EXPECT_EQ(check.facts["governor"], "unknown");
  EXPECT_EQ(check.facts["boost"], "unknown");
  EXPECT_EQ(check.facts["throttle_count"], "unknown");
  EXPECT_EQ(check.facts["smt_siblings_busy"], "unknown");
  EXPECT_EQ(check.facts["busy_cpus"], 0.0);
  // Not even /proc/stat: still unknown, and nothing fails.
  std::filesystem::remove(root_ / "proc/stat");
  const HostCheck bare = HostChecker(root_.string()).Judge(HostReading{}, HostReading{}, 0.2, {0});
  EXPECT_EQ(bare.state, "unknown");
  EXPECT_EQ(bare.facts["busy_cpus"], "unknown");
}

TEST_F(HostCheckTest, ATunedQuietHostIsOk) {
  TunedHost();
  const HostReading before = Reading(Stat(1000, 1000, 5000));
  const HostReading after = Reading(Stat(1001, 1000, 5019));
  const HostCheck check = HostChecker(root_.string()).Judge(before, after, 0.2, {0, 1});
  EXPECT_EQ(check.state, "ok") << check.facts.dump();
  EXPECT_EQ(check.facts["governor"], "performance");
  EXPECT_EQ(check.facts["boost"], "off");
  EXPECT_EQ(check.facts["throttle_count"], 0);
  EXPECT_EQ(check.facts["reasons"], nlohmann::json::array());
}

TEST_F(HostCheckTest, PowersaveBoostAndThrottlingWarn) {
  TunedHost();
  Write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave");
  Write("sys/devices/system/cpu/cpufreq/boost", "1");
  Write("sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "7");
  const HostReading before = Reading(Stat(1000, 1000, 5000));
  const HostReading after = Reading(Stat(1000, 1000, 5020));
  const HostCheck check = HostChecker(root_.string()).Judge(before, after, 0.2, {0, 1});
  EXPECT_EQ(check.state, "warn");
  EXPECT_EQ(check.facts["governor"], "performance,powersave");
  EXPECT_EQ(check.facts["boost"], "on");
  EXPECT_EQ(check.facts["throttle_count"], 7);
  EXPECT_EQ(check.facts["reasons"].size(), 3u) << check.facts.dump();
}

TEST_F(HostCheckTest, OtherProcessesStealAndABusySiblingMakeTheHostBusy) {
  TunedHost();
  // Another process keeps CPU 1 busy (20 ticks in 0.2 s): a busy host, and CPU 1 is
  // the SMT sibling of the job's CPU 0.
  HostReading before = Reading(Stat(1000, 1000, 5000));
  HostReading after = Reading(Stat(1000, 1020, 5020));
  HostCheck check = HostChecker(root_.string()).Judge(before, after, 0.2, {0});
  EXPECT_EQ(check.state, "busy");
  EXPECT_EQ(check.facts["busy_cpus"], 1.0);
  EXPECT_EQ(check.facts["smt_siblings_busy"]["1"], 1.0);
  EXPECT_NE(check.facts["reasons"].dump().find("SMT sibling of job CPU 0"), std::string::npos);
  // The hypervisor's steal alone.
  before = Reading(Stat(1000, 1000, 5000, 0));
  after = Reading(Stat(1000, 1000, 5018, 2));
  check = HostChecker(root_.string()).Judge(before, after, 0.2, {0, 1});
  EXPECT_EQ(check.state, "busy");
  EXPECT_GT(check.facts["steal_fraction"].get<double>(), 0.02);
}

TEST(ParseCpuTicksTest, ReadsTheHostAndEachCpuAndSkipsTheRest) {
  const auto ticks =
      ParseCpuTicks("cpu  10 1 2 100 3 4 5 6 0 0\ncpu0 5 0 1 50 0 0 0 3\ncpu1 5 1 1 50\nctxt 9\n");
  ASSERT_EQ(ticks.size(), 3u);
  EXPECT_EQ(ticks.at(-1).busy, 10 + 1 + 2 + 4 + 5);
  EXPECT_EQ(ticks.at(-1).idle, 103);
  EXPECT_EQ(ticks.at(-1).steal, 6);
  EXPECT_EQ(ticks.at(1).busy, 7);
  EXPECT_EQ(ticks.at(1).steal, 0);
}

}  // namespace
}  // namespace benchfleet
