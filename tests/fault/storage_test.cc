// Fault test 7: the database locked by another process, and the disk under it full.
// Clear errors in the log and to the client, no acknowledged result lost, recovery
// without a restart.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json ShortJobs(int count) {
  json batches = json::array();
  for (int i = 1; i <= count; ++i) batches.push_back(i);
  return {
      {"name", "storage"},
      {"placement", "any"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}}},
      {"models", {{"mlp", {{"layers", {64, 64, 10}}}}}},
      {"timing", {{"warmup_s", 0.02}, {"min_time_s", 0.3}, {"max_time_s", 1}, {"target_ci", 0.5}}}};
}

bool LogHas(Fleet& fleet, const std::string& words) {
  return ReadFile(fleet.coordinator().log_path()).find(words) != std::string::npos;
}

TEST(StorageFaultTest, LockedDatabaseDelaysResultsButLosesNone) {
  FleetOptions options;
  options.worker = kResultWorkerBin;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("a"));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  int64_t sweep_id = fleet.Submit(ShortJobs(3));
  ASSERT_GT(sweep_id, 0);

  // Another process takes the write lock and holds it.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(fleet.db_path().c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_TRUE(WaitFor([&] { return LogHas(fleet, "database is locked"); }, 60s)) << fleet.Logs();
  // A submission is refused with the reason, and nothing is half-stored.
  std::string error;
  EXPECT_EQ(fleet.Submit(ShortJobs(1), &error), -1);
  EXPECT_NE(error.find("could not store the sweep"), std::string::npos) << error;
  EXPECT_NE(error.find("locked"), std::string::npos) << error;
  EXPECT_TRUE(fleet.coordinator().running());

  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  json done = fleet.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 3);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from sweeps"), 1);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from results"), 3);
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults("a") == 0; }, 30s));
  std::cout << "FIGURE database held locked: 3/3 results stored after release, 0 lost\n";
}

TEST(StorageFaultTest, FullDiskStopsAcknowledgingAndRecoversWhenSpaceReturns) {
  TempDir disk("bf-tmpfs");
  if (mount("tmpfs", disk.path().c_str(), "tmpfs", 0, "size=8m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): "
                 << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{disk.path()};

  FleetOptions options;
  options.db_path = disk / "results.db";
  options.worker = kResultWorkerBin;
  Fleet fleet(options);  // declared after `unmount`: stopped before the tmpfs goes
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  ASSERT_TRUE(fleet.StartAgent("a"));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  int64_t sweep_id = fleet.Submit(ShortJobs(4));
  ASSERT_GT(sweep_id, 0);

  // Fill the disk to the last byte.
  const std::string filler = disk / "filler";
  {
    std::ofstream fill(filler, std::ios::binary);
    std::string block(64 * 1024, 'x');
    while (fill.write(block.data(), block.size())) {
    }
  }
  ASSERT_TRUE(WaitFor([&] { return LogHas(fleet, "full"); }, 90s)) << fleet.Logs();
  EXPECT_GE(fleet.SpooledResults("a"), 1u);  // not acknowledged, so still spooled
  std::string error;
  EXPECT_EQ(fleet.Submit(ShortJobs(1), &error), -1);
  EXPECT_NE(error.find("full"), std::string::npos) << error;
  EXPECT_TRUE(fleet.coordinator().running());

  std::filesystem::remove(filler);
  json done = fleet.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 4);
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults("a") == 0; }, 30s));
  const std::string db = disk / "results.db";
  EXPECT_EQ(QueryValue(db, "select count(*) from results"), 4);
  EXPECT_EQ(QueryValue(db, "PRAGMA integrity_check"), "ok");
  std::cout << "FIGURE disk full: results held in the spool, 4/4 stored after space returned\n";
}

}  // namespace
}  // namespace benchfleet::testing
