// The calibration's plumbing with a stand-in GEMM, a fake /proc/cpuinfo and
// sysfs, and small stand-in GPU tools. Measured rates are the host's and
// are not asserted.
#include "worker/host/calibration.h"

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
                 "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 63\n"
                 "model name\t: Test CPU\n"
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
    options_.measure_clock = [] { return std::optional<double>(3000.0); };
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

  // Records each call and returns a fixed rate that names its thread count, below the
  // fake CPU's theoretical peak of 80 GFLOP/s a core (bf16: half of it, with N at most 32).
  GemmMeasure FakeGemm() {
    return [this](GemmDtype dtype, std::int64_t n, int threads) {
      const bool bf16 = dtype == GemmDtype::kBf16;
      calls_.push_back({bf16, n, threads});
      GemmPeak peak;
      peak.n = bf16 && n > 32 ? 32 : n;
      peak.best_gflops = (bf16 ? 30.0 : 60.0) * threads;
      peak.best_seconds = 1;
      peak.timed_runs = 2;
      peak.agreed = true;
      peak.runs_gflops = {peak.best_gflops, peak.best_gflops};
      return peak;
    };
  }

  struct GemmCall {
    bool bf16;
    std::int64_t n;
    int threads;
    bool operator==(const GemmCall& o) const {
      return bf16 == o.bf16 && n == o.n && threads == o.threads;
    }
  };

  fs::path dir_;
  std::vector<int> cpus_;
  CalibrationOptions options_;
  std::vector<GemmCall> calls_;
};

TEST_F(CalibrationTest, ReportsEveryCpuFigureAndItsInputs) {
  const json r = RunCalibration(options_, FakeGemm());
  const int all = static_cast<int>(cpus_.size());
  ASSERT_EQ(calls_.size(), 4u);
  EXPECT_TRUE((calls_[0] == GemmCall{false, 64, all}));
  EXPECT_TRUE((calls_[1] == GemmCall{true, 64, all}));
  EXPECT_TRUE((calls_[2] == GemmCall{false, 64, 1}));
  // Each measurement chooses its own N from gemm_n: one CPU is busy at a smaller one.
  EXPECT_TRUE((calls_[3] == GemmCall{true, 64, 1}));

  const json& cpu = r.at("cpu");
  EXPECT_EQ(cpu.at("model_name"), "Test CPU");
  EXPECT_EQ(cpu.at("cpus"), json(cpus_));
  EXPECT_EQ(cpu.at("gemm_n"), 64);
  EXPECT_EQ(cpu.at("gemm_threads_all"), cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("gemm_gflops_all").get<double>(), 60.0 * cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("gemm_gflops_1").get<double>(), 60.0);
  EXPECT_EQ(cpu.at("gemm_bf16_n"), 32);
  EXPECT_DOUBLE_EQ(cpu.at("gemm_bf16_gflops_all").get<double>(), 30.0 * cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("gemm_bf16_gflops_1").get<double>(), 30.0);
  EXPECT_EQ(cpu.at("gemm_detail").at("fp32_1").at("runs_gflops"), json({60.0, 60.0}));
  EXPECT_EQ(cpu.at("gemm_detail").at("bf16_1").at("n"), 32);
  EXPECT_FALSE(r.contains("error"));
  EXPECT_GT(cpu.at("stream_triad_gbps_all").get<double>(), 0);
  EXPECT_GT(cpu.at("stream_triad_gbps_1").get<double>(), 0);
  EXPECT_DOUBLE_EQ(cpu.at("stream_array_mb").get<double>(), 1.0);
  EXPECT_TRUE(cpu.at("llc_mb").is_null());  // the fake sysfs has no cache
  EXPECT_EQ(cpu.at("cores_all"), cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("clock_mhz").get<double>(), 2500.0);
  EXPECT_EQ(cpu.at("clock_source"), "cpufreq cpuinfo_max_freq");
  EXPECT_DOUBLE_EQ(cpu.at("clock_measured_mhz").get<double>(), 3000.0);
  EXPECT_DOUBLE_EQ(cpu.at("clock_cpufreq_max_mhz").get<double>(), 2500.0);
  EXPECT_DOUBLE_EQ(cpu.at("clock_cpuinfo_mhz").get<double>(), 1000.0);
  EXPECT_EQ(cpu.at("isa"), "avx2+fma");
  EXPECT_EQ(cpu.at("flops_per_cycle_fp32"), 32);
  EXPECT_EQ(cpu.at("microarchitecture"), "Haswell");
  EXPECT_EQ(cpu.at("flops_per_cycle_source"),
            "table: GenuineIntel family 0x6 model 0x3f = Haswell, avx2+fma");
  EXPECT_TRUE(cpu.at("cores_source").is_string());
  EXPECT_EQ(cpu.at("flags_isa"), "avx2");
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_gflops_all").get<double>(), 80.0 * cpus_.size());
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_gflops_1").get<double>(), 80.0);
  // No native bf16 in the flags: at most the fp32 rate.
  EXPECT_EQ(cpu.at("flops_per_cycle_bf16"), 32);
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_bf16_gflops_1").get<double>(), 80.0);
  EXPECT_TRUE(cpu.at("theoretical_contradicted").at("fp32").is_null());
  EXPECT_TRUE(cpu.at("theoretical_contradicted").at("bf16").is_null());

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

TEST_F(CalibrationTest, MeasuredClockWhereCpufreqIsAbsent) {
  fs::remove_all(dir_ / "sys");
  const json cpu = RunCalibration(options_, FakeGemm()).at("cpu");
  EXPECT_DOUBLE_EQ(cpu.at("clock_mhz").get<double>(), 3000.0);
  EXPECT_EQ(cpu.at("clock_source"), "measured: dependent add chain");
  EXPECT_TRUE(cpu.at("clock_cpufreq_max_mhz").is_null());
  // Not the 1000 MHz /proc/cpuinfo claims.
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_gflops_1").get<double>(), 3000.0 * 32 / 1000);
}

TEST_F(CalibrationTest, UnknownInputsGiveNullsNotGuesses) {
  Write("cpuinfo", "processor : 0\nflags : neon\n");
  fs::remove_all(dir_ / "sys");
  options_.measure_clock = [] { return std::optional<double>(); };
  const json cpu = RunCalibration(options_, FakeGemm()).at("cpu");
  for (const char* key : {"theoretical_gflops_all", "theoretical_gflops_1", "clock_mhz",
                          "clock_source", "flops_per_cycle_fp32", "isa", "microarchitecture",
                          "flops_per_cycle_source", "clock_measured_mhz"}) {
    EXPECT_TRUE(cpu.at(key).is_null()) << key;
  }
}

// A theoretical peak is an upper bound: a table entry that a measurement beats is wrong
// for this core, and the peak is unknown, never below what the host did.
TEST_F(CalibrationTest, ATheoreticalPeakBelowAMeasurementIsUnknown) {
  const json r = RunCalibration(options_, [](GemmDtype dtype, std::int64_t n, int threads) {
    GemmPeak peak;
    peak.n = n;
    peak.best_gflops = (dtype == GemmDtype::kFp32 ? 95.0 : 40.0) * threads;  // fp32 above 80
    peak.timed_runs = 2;
    peak.agreed = true;
    return peak;
  });
  const json& cpu = r.at("cpu");
  EXPECT_TRUE(cpu.at("theoretical_gflops_1").is_null());
  EXPECT_TRUE(cpu.at("theoretical_gflops_all").is_null());
  ASSERT_TRUE(cpu.at("theoretical_contradicted").at("fp32").is_string());
  EXPECT_NE(cpu.at("theoretical_contradicted").at("fp32").get<std::string>().find("below the 95"),
            std::string::npos)
      << cpu.dump();
  EXPECT_NE(r.at("errors").dump().find("fp32 theoretical peak unknown"), std::string::npos);
  // bf16 stayed below its own peak: kept.
  EXPECT_DOUBLE_EQ(cpu.at("theoretical_bf16_gflops_1").get<double>(), 80.0);
  EXPECT_FALSE(r.contains("error")) << "the measured figures still count";
}

// The development host's case: a KVM guest whose model number says Rocket Lake (one
// 512-bit FMA unit, 32) while its flags have AMX: the flags win, 64 FLOP/cycle, so the
// 146 GFLOP/s one core measured at 3.59 GHz (40.7 FLOP/cycle) is under the peak.
TEST_F(CalibrationTest, NewerFlagsOutrankTheModelNumberAHypervisorShows) {
  std::string cpuinfo;
  for (int cpu : cpus_) {
    cpuinfo +=
        "processor\t: " + std::to_string(cpu) +
        "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n"
        "model name\t: Intel(R) Xeon(R) Processor\nphysical id\t: 0\ncore id\t\t: " +
        std::to_string(cpu) +
        "\nflags\t\t: sse2 avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile\n\n";
  }
  Write("cpuinfo", cpuinfo);
  fs::remove_all(dir_ / "sys");
  options_.measure_clock = [] { return std::optional<double>(3590.0); };
  const json r = RunCalibration(options_, [](GemmDtype dtype, std::int64_t n, int threads) {
    GemmPeak peak;
    peak.n = n;
    peak.best_gflops = (dtype == GemmDtype::kFp32 ? 146.3 : 1088.6) * threads;
    peak.timed_runs = 2;
    peak.agreed = true;
    return peak;
  });
  const json& cpu = r.at("cpu");
  EXPECT_EQ(cpu.at("flops_per_cycle_fp32"), 64) << cpu.dump();
  EXPECT_EQ(cpu.at("microarchitecture"), "Sapphire Rapids class");
  EXPECT_NE(cpu.at("flops_per_cycle_source").get<std::string>().find("Rocket Lake"),
            std::string::npos)
      << "the source says what it overruled";
  EXPECT_NEAR(cpu.at("theoretical_gflops_1").get<double>(), 3590.0 * 64 / 1000, 1e-9);
  EXPECT_GE(cpu.at("theoretical_gflops_1").get<double>(), 146.3);
  EXPECT_EQ(cpu.at("flops_per_cycle_bf16"), 2048);
  EXPECT_GE(cpu.at("theoretical_bf16_gflops_1").get<double>(), 1088.6);
  EXPECT_TRUE(cpu.at("theoretical_contradicted").at("fp32").is_null());
}

TEST_F(CalibrationTest, FailedGemmIsNullWithAnError) {
  const json r = RunCalibration(options_, [](GemmDtype, std::int64_t, int) {
    GemmPeak peak;
    peak.error = "out of memory";
    return peak;
  });
  EXPECT_TRUE(r.at("cpu").at("gemm_gflops_all").is_null());
  EXPECT_TRUE(r.at("cpu").at("gemm_gflops_1").is_null());
  EXPECT_TRUE(r.at("cpu").at("gemm_bf16_gflops_1").is_null());
  ASSERT_EQ(r.at("errors").size(), 4u);
  EXPECT_EQ(r.at("errors")[0], "gemm (all CPUs): out of memory");
}

TEST_F(CalibrationTest, AllCpusSlowerThanOneIsRefusedAsNoisy) {
  if (cpus_.size() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  const json r = RunCalibration(options_, [](GemmDtype, std::int64_t n, int threads) {
    GemmPeak peak;
    peak.n = n;
    peak.best_gflops = threads == 1 ? 100 : 90;  // a neighbour took a core
    peak.timed_runs = 2;
    peak.agreed = true;
    return peak;
  });
  EXPECT_EQ(r.at("ok"), false);
  ASSERT_TRUE(r.at("error").is_string());
  EXPECT_NE(r.at("error").get<std::string>().find("noisy host"), std::string::npos);
  EXPECT_NE(r.at("error").get<std::string>().find("slower than on one"), std::string::npos);
}

TEST_F(CalibrationTest, GemmThatNeverAgreedKeepsTheBestAndSaysSo) {
  const json r = RunCalibration(options_, [](GemmDtype, std::int64_t n, int threads) {
    GemmPeak peak;
    peak.n = n;
    peak.best_gflops = 100.0 * threads;
    peak.timed_runs = kGemmMaxMeasurements;
    peak.agreed = threads != 1;
    return peak;
  });
  EXPECT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.at("cpu").at("gemm_gflops_1"), 100.0);  // the best, stored
  EXPECT_NE(r.at("errors").dump().find("agreed within"), std::string::npos) << r.dump();
}

GemmMeasurement Measured(double gflops) { return {gflops, 1 / gflops, false, ""}; }

TEST(RepeatUntilAgreementTest, StopsAtTwoConsecutiveWithin3PercentAndKeepsTheBest) {
  const std::vector<GemmMeasurement> series = {Measured(80), Measured(100), Measured(102),
                                               Measured(500)};
  std::size_t calls = 0;
  const GemmPeak peak = RepeatUntilAgreement([&] { return series[calls++]; });
  EXPECT_EQ(calls, 3u);
  EXPECT_TRUE(peak.agreed);
  EXPECT_EQ(peak.timed_runs, 3);
  EXPECT_DOUBLE_EQ(peak.best_gflops, 102);
  EXPECT_EQ(peak.runs_gflops, (std::vector<double>{80, 100, 102}));
}

TEST(RepeatUntilAgreementTest, GivesUpAfterTheMaximumWithoutAgreement) {
  std::size_t calls = 0;
  const GemmPeak peak = RepeatUntilAgreement([&] { return Measured(calls++ % 2 ? 100 : 90); });
  EXPECT_EQ(calls, static_cast<std::size_t>(kGemmMaxMeasurements));
  EXPECT_FALSE(peak.agreed);
  EXPECT_DOUBLE_EQ(peak.best_gflops, 100);
  EXPECT_TRUE(peak.error.empty());
}

TEST(RepeatUntilAgreementTest, UnsteadyMeasurementNeverAgrees) {
  std::vector<GemmMeasurement> series = {Measured(100), Measured(101), Measured(100),
                                         Measured(101)};
  series[1].unsteady = true;
  std::size_t calls = 0;
  const GemmPeak peak = RepeatUntilAgreement([&] { return series[calls++]; });
  EXPECT_EQ(calls, 4u);  // 100 then unsteady, then 100 and 101 agree
  EXPECT_TRUE(peak.agreed);
  EXPECT_EQ(peak.runs_gflops, (std::vector<double>{100, 0, 100, 101}));
}

TEST(RepeatUntilAgreementTest, ErrorEndsIt) {
  const GemmPeak peak = RepeatUntilAgreement([] {
    GemmMeasurement m;
    m.error = "out of memory";
    return m;
  });
  EXPECT_EQ(peak.error, "out of memory");
  EXPECT_EQ(peak.timed_runs, 0);
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

TEST(CalibrationRulesTest, PerformanceEnvironmentKeepsOnlyRuntimeVariables) {
  const char* envp[] = {"OPENBLAS_CORETYPE=Haswell",
                        "OMP_WAIT_POLICY=PASSIVE",
                        "PATH=/usr/bin",
                        "MKL_DEBUG_CPU_TYPE=5",
                        "KMP_AFFINITY=compact",
                        "GOMP_SPINCOUNT=0",
                        "HOME=/root",
                        "NOEQUALS",
                        nullptr};
  EXPECT_EQ(PerformanceEnvironment(envp), json({{"OPENBLAS_CORETYPE", "Haswell"},
                                                {"OMP_WAIT_POLICY", "PASSIVE"},
                                                {"MKL_DEBUG_CPU_TYPE", "5"},
                                                {"KMP_AFFINITY", "compact"},
                                                {"GOMP_SPINCOUNT", "0"}}));
  EXPECT_EQ(PerformanceEnvironment(nullptr), json::object());
}

TEST(CalibrationRulesTest, OpenBlasHaswellKernelsOnAnAvx512CpuAreFlagged) {
  const std::optional<BlasKernel> kernel =
      OpenBlasKernel("OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64");
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->name, "Haswell");
  EXPECT_EQ(kernel->isa, "avx2");
  EXPECT_EQ(BlasIsaNarrowerThanCpu(kernel->isa, "avx512f"), true);
  EXPECT_EQ(BlasIsaNarrowerThanCpu(kernel->isa, "avx2"), false);
  EXPECT_EQ(BlasIsaNarrowerThanCpu("avx512f", "avx512f"), false);
  EXPECT_EQ(BlasIsaNarrowerThanCpu("avx2", ""), std::nullopt);

  EXPECT_EQ(OpenBlasKernel("OpenBLAS 0.3.26 DYNAMIC_ARCH SkylakeX MAX_THREADS=128")->isa,
            "avx512f");
  EXPECT_EQ(OpenBlasKernel("OpenBLAS 0.3.21 Zen MAX_THREADS=64")->isa, "avx2");
  EXPECT_FALSE(OpenBlasKernel("OpenBLAS 0.3.21 NEOVERSEN1 MAX_THREADS=64"));
  EXPECT_FALSE(OpenBlasKernel("MKL 2024 Haswell"));
  EXPECT_FALSE(OpenBlasKernel(""));
}

TEST(CalibrationRulesTest, WidestFlagsIsa) {
  EXPECT_EQ(WidestFlagsIsa({"sse2", "avx", "avx2", "fma", "avx512f"}), "avx512f");
  EXPECT_EQ(WidestFlagsIsa({"sse2", "avx", "avx2"}), "avx2");
  EXPECT_EQ(WidestFlagsIsa({"neon"}), "");
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
