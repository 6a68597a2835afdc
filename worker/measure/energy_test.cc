// Energy counters: RAPL through a fake powercap directory laid out as Linux lays it out
// (packages, a sub-zone, the MMIO interface), wrap-around included; and on this host,
// whatever it has, a figure or null with the reason.
#include "worker/measure/energy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace benchfleet::worker {
namespace {

namespace fs = std::filesystem;

class FakePowercap : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("bf-powercap-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    Zone("intel-rapl:0", "package-0", 1000, 262143328850);
    Zone("intel-rapl:0:0", "core", 500, 262143328850);  // counted within package-0
    Zone("intel-rapl:1", "package-1", 2000, 262143328850);
    Zone("intel-rapl:2", "psys", 9000, 262143328850);            // not a package
    Zone("intel-rapl-mmio:0", "package-0", 1000, 262143328850);  // package-0 again
  }
  void TearDown() override { fs::remove_all(root_); }

  void Zone(const std::string& dir, const std::string& name, uint64_t energy, uint64_t range) {
    fs::create_directories(root_ / dir);
    std::ofstream(root_ / dir / "name") << name << "\n";
    std::ofstream(root_ / dir / "max_energy_range_uj") << range << "\n";
    Set(dir, energy);
  }
  void Set(const std::string& dir, uint64_t energy) {
    std::ofstream(root_ / dir / "energy_uj") << energy << "\n";
  }

  fs::path root_;
};

TEST(CounterDeltaTest, UndoesOneWrapAround) {
  EXPECT_EQ(CounterDelta(100, 350, 1000), 250u);
  EXPECT_EQ(CounterDelta(990, 15, 1000), 25u);  // 990 -> 1000 (wrap) -> 15
  EXPECT_EQ(CounterDelta(500, 500, 1000), 0u);
}

TEST_F(FakePowercap, SumsThePackagesOnlyAndUndoesAWrap) {
  std::string why;
  std::optional<RaplCounters> rapl = RaplCounters::Open(root_.string(), &why);
  ASSERT_TRUE(rapl) << why;
  ASSERT_EQ(rapl->zones().size(), 2u);
  EXPECT_EQ(fs::path(rapl->zones()[0]).filename(), "intel-rapl:0");
  EXPECT_EQ(fs::path(rapl->zones()[1]).filename(), "intel-rapl:1");
  const auto before = rapl->Read(&why);
  ASSERT_TRUE(before) << why;
  EXPECT_EQ(*before, (std::vector<uint64_t>{1000, 2000}));
  Set("intel-rapl:0", 3'501'000);        // +3.5 J
  Set("intel-rapl:1", 1'000);            // wrapped: +262143328850 - 2000 + 1000 uJ
  Set("intel-rapl:0:0", 99'000'000);     // a sub-zone, ignored
  Set("intel-rapl-mmio:0", 99'000'000);  // the same package again, ignored
  const auto after = rapl->Read(&why);
  ASSERT_TRUE(after) << why;
  EXPECT_NEAR(rapl->JoulesBetween(*before, *after), 3.5 + (262143328850.0 - 1000.0) / 1e6, 1e-6);
}

TEST_F(FakePowercap, TheMeterReportsJoulesPerSampleAndWatts) {
  EnergyMeter meter(root_.string(), nullptr, "");
  meter.RegionStart();
  Set("intel-rapl:0", 1000 + 6'000'000);  // 6 J
  Set("intel-rapl:1", 2000 + 4'000'000);  // 4 J
  meter.RegionEnd();
  const nlohmann::json r = meter.Report(/*samples=*/500, /*seconds=*/2);
  EXPECT_NEAR(r["cpu_j"].get<double>(), 10.0, 1e-9);
  EXPECT_TRUE(r["gpu_j"].is_null());
  EXPECT_NEAR(r["j_per_sample"].get<double>(), 0.02, 1e-12);
  EXPECT_NEAR(r["avg_w"].get<double>(), 5.0, 1e-9);
  EXPECT_TRUE(r["note"].is_null()) << r.dump();
}

TEST_F(FakePowercap, ACounterThatCannotBeReadGivesNullWithTheReason) {
  fs::remove(root_ / "intel-rapl:1" / "energy_uj");
  fs::create_directories(root_ / "intel-rapl:1" / "energy_uj");  // not a file any more
  std::string why;
  EXPECT_FALSE(RaplCounters::Open(root_.string(), &why));
  EXPECT_NE(why.find("intel-rapl:1/energy_uj"), std::string::npos) << why;
  EnergyMeter meter(root_.string(), nullptr, "");
  meter.RegionStart();
  meter.RegionEnd();
  const nlohmann::json r = meter.Report(10, 1);
  for (const char* key : {"cpu_j", "gpu_j", "j_per_sample", "avg_w"})
    EXPECT_TRUE(r[key].is_null()) << key;
  EXPECT_NE(r["note"].get<std::string>().find("energy_uj"), std::string::npos) << r.dump();
}

TEST_F(FakePowercap, NoPackageZoneGivesNullWithTheReason) {
  std::string why;
  EXPECT_FALSE(RaplCounters::Open((root_ / "intel-rapl:2").string(), &why));
  EXPECT_NE(why.find("no RAPL package zone"), std::string::npos) << why;
  EXPECT_FALSE(RaplCounters::Open((root_ / "absent").string(), &why));
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
}

// This host: a VM usually has no powercap, and then every figure is null with the reason;
// never an estimate.
TEST(EnergyOnThisHost, IsMeasuredOrNullWithTheReason) {
  EnergyMeter meter(kPowercapRoot, nullptr, "");
  meter.RegionStart();
  meter.RegionEnd();
  const nlohmann::json r = meter.Report(1000, 0.5);
  if (r["cpu_j"].is_null()) {
    ASSERT_TRUE(r["note"].is_string()) << r.dump();
    EXPECT_TRUE(r["j_per_sample"].is_null());
    EXPECT_TRUE(r["avg_w"].is_null());
    std::cout << "energy on this host: " << r["note"].get<std::string>() << "\n";
  } else {
    EXPECT_GE(r["cpu_j"].get<double>(), 0);
  }
}

}  // namespace
}  // namespace benchfleet::worker
