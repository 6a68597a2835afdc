// The calibration's plumbing with a stand-in GEMM, a fake /proc/cpuinfo and
// sysfs, and small stand-in GPU tools. Measured rates are the host's and
// are not asserted.
#include "worker/calibration.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace benchfleet::worker {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<int> AllowedCpusForTest() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

class CalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("calibration_test." + std::to_string(getpid()));
    fs::create_directories(dir_);
    cpus_ = AllowedCpusForTest();
    ASSERT_FALSE(cpus_.empty());
    std::string cpuinfo;
    for (int cpu : cpus_) {
      cpuinfo += "processor\t: " + std::to_string(cpu) +
                 "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Test CPU\n"
                 "cpu MHz\t\t: 1000.000\nphysical id\t: 0\ncore id\t\t: " +
                 std::to_string(cpu) + "\nflags\t\t: sse2 avx avx2 fma\n\n";
    }
    Write("cpuinfo", cpuinfo);
    Write("sys/cpu" + std::to_string(cpus_.front()) + "/cpufreq/cpuinfo_max_freq", "2500000\n");
    options_.cpus = cpus_;
    options_.gemm_n = 64;
    options_.triad_array_bytes = 1 << 20;
    options_.proc_cpuinfo_path = (dir_ / "cpuinfo").string();
    options_.sysfs_cpu_root = (dir_ / "sys").string();
    options_.gpu_tool_path = (dir_ / "absent-tool").string();
  }
  void TearDown() override {
    PinAllThreads(cpus_);
    fs::remove_all(dir_);
  }

  void Write(const std::string& relative, const std::string& text) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  std::string Script(const std::string& name, const std::string& body) {
    Write(name, "#!/bin/sh\n" + body + "\n");
    const std::string path = (dir_ / name).string();
    chmod(path.c_str(), 0755);
    return path;
  }

  // Records each call and returns a fixed rate that names its thread count.
  GemmMeasure FakeGemm() {
    return [this](std::int64_t n, int threads) {
      calls_.push_back({n, threads});
      GemmPeak peak;
      peak.best_gflops = 100.0 * threads;
      peak.best_seconds = 1;
      peak.timed_runs = 5;
      return peak;
    };
  }

  fs::path dir_;
  std::vector<int> cpus_;
  CalibrationOptions options_;
  std::vector<std::pair<std::int64_t, int>> calls_;
};

TEST_F(CalibrationTest, ReportsEveryCpuFigureAndItsInputs) {
  const json r = RunCalibration(options_, FakeGemm());
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[0], (std::pair<std::int64_t, int>{64, static_cast<int>(cpus_.size())}));
  EXPECT_EQ(calls_[1], (std::pair<std::int64_t, int>{64, 1}));

  const json& cpu = r.at("cpu");
  EXPECT_EQ(cpu.at("model_name"), "Test CPU");
  EXPECT_EQ(cpu.at("cpus"), json(cpus_));
  EXPECT_EQ(cpu.at("gemm_n"), 64);
  EXPECT_EQ(cpu.at("gemm_threads_all"), cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("gemm_gflops_all").get<double>(), 100.0 * cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("gemm_gflops_1").get<double>(), 100.0);
  EXPECT_GT(cpu.at("stream_triad_gbps_all").get<double>(), 0);
  EXPECT_GT(cpu.at("stream_triad_gbps_1").get<double>(), 0);
  EXPECT_DOUBLE_EQ(cpu.at("stream_array_mb").get<double>(), 1.0);
  EXPECT_TRUE(cpu.at("llc_mb").is_null());  // the fake sysfs has no cache
  EXPECT_EQ(cpu.at("cores_all"), cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("clock_mhz").get<double>(), 2500.0);
  EXPECT_EQ(cpu.at("clock_source"), "cpufreq cpuinfo_max_freq");
  EXPECT_EQ(cpu.at("isa"), "avx2+fma");
  EXPECT_EQ(cpu.at("flops_per_cycle_fp32"), 32);
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_gflops_all").get<double>(), 80.0 * cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_gflops_1").get<double>(), 80.0);

  EXPECT_EQ(r.at("errors"), json::array());
  EXPECT_EQ(r.at("gpus"), json::array());
  ASSERT_TRUE(r.at("gpu_note").is_string());
  EXPECT_NE(r.at("gpu_note").get<std::string>().find("benchfleet-gpu-calibrate not found"),
            std::string::npos);
  const std::string at = r.at("measured_at");
  EXPECT_EQ(at.size(), 20u);
  EXPECT_EQ(at.back(), 'Z');
  EXPECT_GE(r.at("seconds").get<double>(), 0);
}

TEST_F(CalibrationTest, UnknownInputsGiveNullsNotGuesses) {
  Write("cpuinfo", "processor : 0\nflags : neon\n");
  fs::remove_all(dir_ / "sys");
  const json cpu = RunCalibration(options_, FakeGemm()).at("cpu");
  for (const char* key : {"theoretical_gflops_all", "theoretical_gflops_1", "clock_mhz",
                          "clock_source", "flops_per_cycle_fp32", "isa"}) {
    EXPECT_TRUE(cpu.at(key).is_null()) << key;
  }
}

TEST_F(CalibrationTest, FailedGemmIsNullWithAnError) {
  const json r = RunCalibration(options_, [](std::int64_t, int) {
    GemmPeak peak;
    peak.error = "out of memory";
    return peak;
  });
  EXPECT_TRUE(r.at("cpu").at("gemm_gflops_all").is_null());
  EXPECT_TRUE(r.at("cpu").at("gemm_gflops_1").is_null());
  ASSERT_EQ(r.at("errors").size(), 2u);
  EXPECT_EQ(r.at("errors")[0], "gemm (all CPUs): out of memory");
}

TEST_F(CalibrationTest, GpusComeFromTheTool) {
  options_.gpu_tool_path = Script(
      "gpu-tool", "echo 'diagnostics' >&2; echo '{\"gpus\": [{\"index\": 0, \"name\": \"X\"}]}'");
  const json r = RunCalibration(options_, FakeGemm());
  ASSERT_EQ(r.at("gpus").size(), 1u);
  EXPECT_EQ(r.at("gpus")[0].at("name"), "X");
  EXPECT_TRUE(r.at("gpu_note").is_null());
}

TEST_F(CalibrationTest, ToolWithoutDevicePassesItsNoteOn) {
  const GpuCalibration gpu = RunGpuCalibrationTool(
      Script("gpu-tool", "echo '{\"gpus\": [], \"note\": \"no CUDA device: no driver\"}'"));
  EXPECT_EQ(gpu.gpus, json::array());
  EXPECT_EQ(gpu.note, "no CUDA device: no driver");
}

TEST_F(CalibrationTest, FailingOrGarbledToolGivesANote) {
  GpuCalibration gpu = RunGpuCalibrationTool(Script("gpu-tool", "exit 3"));
  EXPECT_EQ(gpu.gpus, json::array());
  EXPECT_EQ(gpu.note, "benchfleet-gpu-calibrate failed (exit status 3)");
  gpu = RunGpuCalibrationTool(Script("gpu-tool2", "echo '{\"gpus\": 5}'"));
  EXPECT_EQ(gpu.gpus, json::array());
  EXPECT_EQ(gpu.note, "benchfleet-gpu-calibrate printed no JSON object with a \"gpus\" array");
  gpu = ParseGpuCalibrationOutput(0, "not json");
  EXPECT_TRUE(gpu.note.is_string());
}

TEST(CalibrationRulesTest, TriadArraysOutgrowTheCache) {
  EXPECT_EQ(TriadArrayBytes(std::nullopt), kTriadArrayBytesWhenCacheUnknown);
  EXPECT_EQ(TriadArrayBytes(std::int64_t{1} << 20), kMinTriadArrayBytes);
  EXPECT_EQ(TriadArrayBytes(std::int64_t{32} << 20), std::int64_t{128} << 20);
  EXPECT_EQ(TriadArrayBytes(std::int64_t{1} << 30), kMaxTriadArrayBytes);
}

TEST(CalibrationRulesTest, FormatsUtcTimestamps) {
  EXPECT_EQ(Iso8601Utc(std::chrono::system_clock::from_time_t(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Iso8601Utc(std::chrono::system_clock::from_time_t(1700000000)), "2023-11-14T22:13:20Z");
}

TEST(CalibrationRulesTest, FindsProgramsNextToThisExecutable) {
  const std::string path = PathNextToExecutable("benchfleet-gpu-calibrate");
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(fs::path(path).filename(), "benchfleet-gpu-calibrate");
  EXPECT_EQ(fs::path(path).parent_path(), fs::canonical("/proc/self/exe").parent_path());
}

}  // namespace
}  // namespace benchfleet::worker
