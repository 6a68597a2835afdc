// Raw samples: packed one BLOB per result, unpacked by C++ and by the `samples` view in
// plain SQL alike; an older store's per-sample rows move into BLOBs on upgrade.
#include "coordinator/store/sample_blob.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "coordinator/store/legacy_store_fixture.h"
#include "coordinator/store/store.h"
#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

double AsFloat32(double ms) { return static_cast<float>(ms); }

// Awkward values a float32 can hold: zero, a subnormal, the smallest normal, values
// across many binades, and the largest sample a result may carry.
std::vector<double> AwkwardSamples() {
  return {0.0,        1e-42,     static_cast<double>(std::numeric_limits<float>::min()),
          0.000731,   0.5,       1.0,
          2.1,        12.345678, 1024.0,
          98765.4321, 3.0e9,     1e30};
}

TEST(SampleBlobTest, PacksFourLittleEndianBytesPerSampleAndUnpacksThem) {
  const std::vector<double> samples = AwkwardSamples();
  const std::string blob = PackSamples(samples);
  ASSERT_EQ(blob.size(), 4 * samples.size());
  // 1.0f is 0x3f800000: little-endian puts the low byte first.
  EXPECT_EQ(blob.substr(4 * 5, 4), std::string("\x00\x00\x80\x3f", 4));
  auto unpacked = UnpackSamples(blob);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status().ToString();
  ASSERT_EQ(unpacked->size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ((*unpacked)[i], AsFloat32(samples[i])) << i;
    if (samples[i] > 1e-30) {
      EXPECT_NEAR((*unpacked)[i] / samples[i], 1.0, 1e-7) << i;
    }
  }
  EXPECT_FALSE(UnpackSamples("abc").ok());
  EXPECT_TRUE(UnpackSamples("")->empty());
}

// How long a user's SQLite client in these tests waits on a lock.
constexpr int kUserClientBusyTimeoutMs = 5000;

class SamplesViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-samples-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A connection with nothing of benchfleet's registered, as a user's SQLite client has.
  // It waits on a lock as such a client does (the shell's .timeout): its first read can
  // meet the store's checkpointer thread opening the log's index (SQLITE_BUSY_RECOVERY
  // right after an upgraded store went back to WAL mode), which without a busy handler
  // fails at once instead of retrying.
  std::unique_ptr<Database> PlainConnection() {
    auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    if (!db.ok()) return nullptr;
    sqlite3_busy_timeout((*db)->handle(), kUserClientBusyTimeoutMs);
    return std::move(*db);
  }

  std::vector<double> ViewSamples(Database& db, int64_t job_id) {
    std::vector<double> samples;
    auto stmt = db.Prepare("SELECT idx, ms FROM samples WHERE job_id = ?1 ORDER BY idx");
    EXPECT_TRUE(stmt.ok()) << stmt.status().ToString();
    stmt->Bind(1, job_id);
    while (*stmt->Step()) {
      EXPECT_EQ(stmt->Int(0), static_cast<int64_t>(samples.size()));
      samples.push_back(stmt->Real(1));
    }
    return samples;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(SamplesViewTest, PlainSqlUnpacksEveryFloat32ExactlyAsCxxDoes) {
  { ASSERT_TRUE(Store::Open(path_).ok()); }  // creates the schema
  auto db = PlainConnection();
  ASSERT_NE(db, nullptr);
  // The view reads result_samples alone; rows are written here as the store writes them.
  ASSERT_TRUE(db->Exec("PRAGMA foreign_keys=OFF").ok());
  const std::vector<double> awkward = AwkwardSamples();
  std::vector<double> many;
  for (int i = 0; i < 5000; ++i) many.push_back(0.01 * std::pow(1.0031, i) * (1 + (i % 7) * 1e-5));
  int64_t job_id = 0;
  for (const auto& samples : {awkward, many, std::vector<double>{3.25}}) {
    auto insert =
        db->Prepare("INSERT INTO result_samples(job_id, n, ms_f32le) VALUES (?1, ?2, ?3)");
    ASSERT_TRUE(insert.ok());
    ASSERT_TRUE(insert->Bind(1, ++job_id)
                    .Bind(2, static_cast<int64_t>(samples.size()))
                    .BindBlob(3, PackSamples(samples))
                    .Run()
                    .ok());
    const std::vector<double> unpacked = *UnpackSamples(PackSamples(samples));
    EXPECT_EQ(ViewSamples(*db, job_id), unpacked) << "job " << job_id;
  }
  // A lookup by job is a primary-key search, not a walk over every result.
  auto plan = db->Prepare("EXPLAIN QUERY PLAN SELECT ms FROM samples WHERE job_id = 2");
  ASSERT_TRUE(plan.ok());
  std::string steps;
  while (*plan->Step()) steps += plan->Text(3) + "\n";
  EXPECT_NE(steps.find("SEARCH rs USING INTEGER PRIMARY KEY"), std::string::npos) << steps;
}

TEST_F(SamplesViewTest, AnOlderStoresSampleRowsMoveIntoOneBlobPerResult) {
  // A store as old version 4 left it (coordinator/store/legacy_store_fixture.h): one row per
  // sample, rows out of order.
  {
    auto db = CreateLegacyStore(path_, 4);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO hosts(host_id, name, machine_id, first_seen, last_seen) "
                           "VALUES (1, 'a', 'm', 't', 't');"
                           "INSERT INTO sweeps(sweep_id, name, spec, state, created_at) "
                           "VALUES (1, 's', '{}', 'done', 't');"
                           "INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, state, created_at) "
                           "VALUES (1, 1, '{}', 60, 'done', 't'), (2, 1, '{}', 60, 'done', 't');"
                           "INSERT INTO results(job_id, attempt, host_id, ok, detail, received_at) "
                           "VALUES (1, 1, 1, 1, '{}', 't'), (2, 1, 1, 1, '{}', 't');"
                           "INSERT INTO samples(job_id, idx, ms) VALUES "
                           "(1, 2, 1.9), (1, 0, 2.0), (1, 1, 2.1), (2, 0, 0.125);")
                    .ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto db = PlainConnection();
  ASSERT_NE(db, nullptr);
  auto rows = db->Prepare("SELECT job_id, n, ms_f32le FROM result_samples ORDER BY job_id");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_TRUE(*rows->Step());
  EXPECT_EQ(rows->Int(0), 1);
  EXPECT_EQ(rows->Int(1), 3);
  EXPECT_EQ(*UnpackSamples(rows->Blob(2)),
            (std::vector<double>{AsFloat32(2.0), AsFloat32(2.1), AsFloat32(1.9)}));
  ASSERT_TRUE(*rows->Step());
  EXPECT_EQ(rows->Int(1), 1);
  EXPECT_FALSE(*rows->Step());
  EXPECT_EQ(ViewSamples(*db, 1),
            (std::vector<double>{AsFloat32(2.0), AsFloat32(2.1), AsFloat32(1.9)}));
  EXPECT_EQ(ViewSamples(*db, 2), (std::vector<double>{0.125}));
}

}  // namespace
}  // namespace benchfleet
