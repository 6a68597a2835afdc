#include "worker/host/cpu_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace benchfleet::worker {
namespace {

// Two blocks as a 2-vCPU AMD guest prints them (flags shortened).
constexpr char kAmdGuest[] =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 26\n"
    "model\t\t: 2\n"
    "model name\t: AMD EPYC\n"
    "cpu MHz\t\t: 2096.001\n"
    "physical id\t: 0\n"
    "core id\t\t: 0\n"
    "flags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512bw\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 26\n"
    "model\t\t: 2\n"
    "model name\t: AMD EPYC\n"
    "cpu MHz\t\t: 2096.001\n"
    "physical id\t: 0\n"
    "core id\t\t: 1\n"
    "flags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512bw\n"
    "\n";

CpuInfoProcessor WithFlags(std::set<std::string> flags, std::string vendor = "GenuineIntel",
                           std::optional<int> family = 6) {
  CpuInfoProcessor cpu;
  cpu.processor = 0;
  cpu.vendor_id = std::move(vendor);
  cpu.family = family;
  cpu.flags = std::move(flags);
  return cpu;
}

TEST(CpuInfoTest, ParsesEveryProcessorBlock) {
  const auto processors = ParseCpuInfo(kAmdGuest);
  ASSERT_EQ(processors.size(), 2u);
  EXPECT_EQ(processors[0].processor, 0);
  EXPECT_EQ(processors[1].processor, 1);
  EXPECT_EQ(processors[0].vendor_id, "AuthenticAMD");
  EXPECT_EQ(processors[0].model_name, "AMD EPYC");
  EXPECT_EQ(processors[0].family, 26);
  EXPECT_EQ(processors[0].model, 2);
  ASSERT_TRUE(processors[0].mhz.has_value());
  EXPECT_DOUBLE_EQ(*processors[0].mhz, 2096.001);
  EXPECT_EQ(processors[1].core_id, 1);
  EXPECT_EQ(processors[1].physical_id, 0);
  EXPECT_EQ(processors[0].flags.count("avx512f"), 1u);
  EXPECT_EQ(processors[0].flags.count("avx512"), 0u);  // whole words only
}

TEST(CpuInfoTest, BlocksWithoutProcessorLineAndGarbageAreSkipped) {
  const auto processors =
      ParseCpuInfo("vendor_id : X\n\nno colon here\nprocessor : 3\ncpu MHz : fast\ncore id : 2\n");
  ASSERT_EQ(processors.size(), 1u);
  EXPECT_EQ(processors[0].processor, 3);
  EXPECT_FALSE(processors[0].mhz.has_value());
  EXPECT_EQ(processors[0].core_id, 2);
  EXPECT_TRUE(ParseCpuInfo("").empty());
}

CpuInfoProcessor Core(std::string vendor, int family, int model, std::set<std::string> flags) {
  CpuInfoProcessor cpu = WithFlags(std::move(flags), std::move(vendor), family);
  cpu.model = model;
  return cpu;
}

const std::set<std::string> kAvx512 = {"sse2", "avx", "avx2", "fma", "avx512f"};
const std::set<std::string> kAvx2 = {"sse2", "avx", "avx2", "fma"};

TEST(CpuInfoTest, FlopsPerCycleComeFromTheMicroArchitecture) {
  struct Case {
    const char* vendor;
    int family;
    int model;
    const char* name;
    int flops;
  };
  for (const Case& c : {
           Case{"AuthenticAMD", 0x1a, 0x02, "Zen 5", 64},  // Turin
           Case{"AuthenticAMD", 0x1a, 0x44, "Zen 5", 64},  // Granite Ridge
           Case{"AuthenticAMD", 0x19, 0x11, "Zen 4", 32},  // Genoa: 512 bits as two halves
           Case{"AuthenticAMD", 0x19, 0x61, "Zen 4", 32},  // Raphael
           Case{"GenuineIntel", 6, 0x55, "Skylake-SP/Cascade Lake", 64},
           Case{"GenuineIntel", 6, 0x6a, "Ice Lake-SP", 64},
           Case{"GenuineIntel", 6, 0x8f, "Sapphire Rapids", 64},
           Case{"GenuineIntel", 6, 0x7e, "Ice Lake (client)", 32},  // one 512-bit FMA unit
       }) {
    const auto peak = Fp32PeakPerCycle(Core(c.vendor, c.family, c.model, kAvx512));
    ASSERT_TRUE(peak) << c.name;
    EXPECT_EQ(peak->microarchitecture, c.name);
    EXPECT_EQ(peak->isa, "avx512f") << c.name;
    EXPECT_EQ(peak->flops_per_cycle_fp32, c.flops) << c.name;
  }
  for (const Case& c : {
           Case{"AuthenticAMD", 0x19, 0x01, "Zen 3", 32},  // Milan
           Case{"AuthenticAMD", 0x19, 0x21, "Zen 3", 32},  // Vermeer
           Case{"AuthenticAMD", 0x17, 0x31, "Zen 2", 32},  // Rome
           Case{"AuthenticAMD", 0x17, 0x01, "Zen/Zen+", 16},
           Case{"GenuineIntel", 6, 0x3f, "Haswell", 32},
           Case{"GenuineIntel", 6, 0x4f, "Broadwell", 32},
       }) {
    const auto peak = Fp32PeakPerCycle(Core(c.vendor, c.family, c.model, kAvx2));
    ASSERT_TRUE(peak) << c.name;
    EXPECT_EQ(peak->microarchitecture, c.name);
    EXPECT_EQ(peak->isa, "avx2+fma") << c.name;
    EXPECT_EQ(peak->flops_per_cycle_fp32, c.flops) << c.name;
  }
}

TEST(CpuInfoTest, SourceNamesTheTableRow) {
  const auto peak = Fp32PeakPerCycle(Core("AuthenticAMD", 0x1a, 0x02, kAvx512));
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->source, "table: AuthenticAMD family 0x1a model 0x2 = Zen 5, avx512f");
}

TEST(CpuInfoTest, GuestWithoutAvx512FlagsIsNotCreditedWithIt) {
  // A Zen 5 or Skylake-SP guest whose hypervisor hides AVX-512.
  auto peak = Fp32PeakPerCycle(Core("AuthenticAMD", 0x1a, 0x02, kAvx2));
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->isa, "avx2+fma");
  EXPECT_EQ(peak->flops_per_cycle_fp32, 32);
  // A known core without even AVX2+FMA in its flags: unknown.
  EXPECT_FALSE(Fp32PeakPerCycle(Core("GenuineIntel", 6, 0x55, {"sse2", "avx"})));
}

TEST(CpuInfoTest, FlagsOnlyNewerPartsHaveOutrankTheModelNumber) {
  std::set<std::string> amx = kAvx512;
  amx.insert({"avx512_fp16", "amx_tile", "amx_bf16", "avx512_bf16"});
  // A KVM guest of a Sapphire Rapids class host presenting model 0xa7 (Rocket Lake).
  auto peak = Fp32PeakPerCycle(Core("GenuineIntel", 6, 0xa7, amx));
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->flops_per_cycle_fp32, 64);
  EXPECT_EQ(peak->microarchitecture, "Sapphire Rapids class");
  EXPECT_NE(peak->source.find("flags: amx_tile"), std::string::npos) << peak->source;
  EXPECT_NE(peak->source.find("Rocket Lake"), std::string::npos) << peak->source;
  // A model the table does not know is known by such flags.
  peak = Fp32PeakPerCycle(Core("GenuineIntel", 6, 0xd0, amx));
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->flops_per_cycle_fp32, 64);
  // Without them, the model number stands.
  peak = Fp32PeakPerCycle(Core("GenuineIntel", 6, 0xa7, kAvx512));
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak->flops_per_cycle_fp32, 32);
  EXPECT_EQ(peak->microarchitecture, "Rocket Lake");
}

TEST(CpuInfoTest, Bf16PerCycleFollowsTheNativeInstructions) {
  std::set<std::string> amx = kAvx512;
  amx.insert({"amx_tile", "amx_bf16", "avx512_bf16"});
  EXPECT_EQ(Fp32PeakPerCycle(Core("GenuineIntel", 6, 0x8f, amx))->flops_per_cycle_bf16, 2048);
  std::set<std::string> zen4 = kAvx512;
  zen4.insert("avx512_bf16");
  // Zen 4: VDPBF16PS, two products per fp32 lane on its 256-bit pipes.
  EXPECT_EQ(Fp32PeakPerCycle(Core("AuthenticAMD", 0x19, 0x11, zen4))->flops_per_cycle_bf16, 64);
  // No native bf16: no faster than fp32.
  EXPECT_EQ(Fp32PeakPerCycle(Core("AuthenticAMD", 0x19, 0x01, kAvx2))->flops_per_cycle_bf16, 32);
}

TEST(CpuInfoTest, UnknownCoreIsUnknownNotAGuess) {
  EXPECT_FALSE(Fp32PeakPerCycle(Core("GenuineIntel", 6, 0x97, kAvx2)));       // Alder Lake: hybrid
  EXPECT_FALSE(Fp32PeakPerCycle(Core("AuthenticAMD", 0x1b, 0x00, kAvx512)));  // a future family
  EXPECT_FALSE(Fp32PeakPerCycle(Core("HygonGenuine", 0x18, 0x00, kAvx2)));
  EXPECT_FALSE(Fp32PeakPerCycle(WithFlags(kAvx512)));  // no model line
}

TEST(CpuInfoTest, ClockPrefersCpufreqMaximumThenTheMeasuredOne) {
  auto clock = ChooseClock(std::string("3700000\n"), 3300.0);
  ASSERT_TRUE(clock);
  EXPECT_DOUBLE_EQ(clock->mhz, 3700.0);
  EXPECT_EQ(clock->source, kClockSourceCpufreq);

  clock = ChooseClock(std::nullopt, 3300.0);
  ASSERT_TRUE(clock);
  EXPECT_DOUBLE_EQ(clock->mhz, 3300.0);
  EXPECT_EQ(clock->source, kClockSourceMeasured);

  clock = ChooseClock(std::string("garbage"), 3300.0);  // unreadable cpufreq: fall back
  ASSERT_TRUE(clock);
  EXPECT_EQ(clock->source, kClockSourceMeasured);

  EXPECT_FALSE(ChooseClock(std::nullopt, std::nullopt));
  EXPECT_FALSE(ParseCpufreqKhzAsMhz("0"));
  EXPECT_FALSE(ParseCpufreqKhzAsMhz("-5"));
}

TEST(CpuInfoTest, MeasuredClockIsPlausibleOnX86) {
#if defined(__x86_64__)
  // Only the plausibility window is asserted: the figure depends on the host.
  const std::optional<double> mhz = MeasureCoreClockMhz();
  ASSERT_TRUE(mhz);
  EXPECT_GE(*mhz, 200);
  EXPECT_LE(*mhz, 10000);
#else
  EXPECT_FALSE(MeasureCoreClockMhz());
#endif
}

TEST(CpuInfoTest, PhysicalCoresCountSmtSiblingsOnce) {
  // Four logical CPUs, two cores with two hardware threads each.
  std::vector<CpuInfoProcessor> processors(4);
  for (int i = 0; i < 4; ++i) {
    processors[static_cast<std::size_t>(i)].processor = i;
    processors[static_cast<std::size_t>(i)].physical_id = 0;
    processors[static_cast<std::size_t>(i)].core_id = i % 2;
  }
  EXPECT_EQ(PhysicalCores(processors, {0, 1, 2, 3}), 2);
  EXPECT_EQ(PhysicalCores(processors, {0, 2}), 1);
  EXPECT_EQ(PhysicalCores(processors, {0, 1}), 2);
  EXPECT_FALSE(PhysicalCores(processors, {0, 7}));  // CPU 7 unknown
  EXPECT_FALSE(PhysicalCores(processors, {}));
  processors[1].core_id.reset();
  EXPECT_FALSE(PhysicalCores(processors, {0, 1}));
  EXPECT_EQ(PhysicalCores(ParseCpuInfo(kAmdGuest), {0, 1}), 2);
}

TEST(CpuInfoTest, TheoreticalPeakNeedsEveryInput) {
  const auto peak = TheoreticalGflops(2, 2096.001, 64);
  ASSERT_TRUE(peak);
  EXPECT_DOUBLE_EQ(*peak, 2 * 2096.001 * 64 / 1000);
  EXPECT_FALSE(TheoreticalGflops(std::nullopt, 2096.0, 64));
  EXPECT_FALSE(TheoreticalGflops(2, std::nullopt, 64));
  EXPECT_FALSE(TheoreticalGflops(2, 2096.0, std::nullopt));
  EXPECT_FALSE(TheoreticalGflops(0, 2096.0, 64));
}

TEST(CpuInfoTest, CacheSizesParseWithUnits) {
  EXPECT_EQ(ParseCacheSize("32768K\n"), std::int64_t{32} << 20);
  EXPECT_EQ(ParseCacheSize("1M"), std::int64_t{1} << 20);
  EXPECT_EQ(ParseCacheSize("512"), 512);
  EXPECT_FALSE(ParseCacheSize(""));
  EXPECT_FALSE(ParseCacheSize("K"));
  EXPECT_FALSE(ParseCacheSize("12X"));
  EXPECT_FALSE(ParseCacheSize("0K"));
}

TEST(CpuInfoTest, LastLevelCacheSumsDistinctInstances) {
  // Two L3 instances (one per core complex), each seen from two CPUs.
  const std::vector<CacheIndex> caches = {
      {1, "Data", 48 << 10, "0"},      {1, "Instruction", 32 << 10, "0"},
      {2, "Unified", 1 << 20, "0"},    {3, "Unified", 32 << 20, "0-1"},
      {3, "Unified", 32 << 20, "0-1"}, {3, "Unified", 32 << 20, "2-3"},
      {3, "Unified", 32 << 20, "2-3"}, {4, "Instruction", 1 << 10, "0-3"},
  };
  EXPECT_EQ(LastLevelCacheBytes(caches), std::int64_t{64} << 20);
  EXPECT_FALSE(LastLevelCacheBytes({}));
  EXPECT_FALSE(LastLevelCacheBytes({{1, "Instruction", 32 << 10, "0"}}));
}

TEST(CpuInfoTest, ReadsCacheIndexesFromASysfsTree) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("cpu_info_test." + std::to_string(getpid()));
  auto write = [&](const std::string& relative, const std::string& text) {
    const auto path = root / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  for (int cpu : {0, 1}) {
    const std::string dir = "cpu" + std::to_string(cpu) + "/cache/";
    write(dir + "index0/level", "1\n");
    write(dir + "index0/type", "Data\n");
    write(dir + "index0/size", "48K\n");
    write(dir + "index0/shared_cpu_list", std::to_string(cpu) + "\n");
    write(dir + "index1/level", "3\n");
    write(dir + "index1/type", "Unified\n");
    write(dir + "index1/size", "32768K\n");
    write(dir + "index1/shared_cpu_list", "0-1\n");
  }
  const auto caches = ReadCacheIndexes(root.string(), {0, 1});
  EXPECT_EQ(caches.size(), 4u);
  EXPECT_EQ(LastLevelCacheBytes(caches), std::int64_t{32} << 20);
  EXPECT_TRUE(ReadCacheIndexes(root.string(), {5}).empty());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace benchfleet::worker
