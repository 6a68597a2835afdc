// StoreReader (sqlite/reader.h): what the read-only connection lets through, and which
// store files it opens.
#include "sqlite/reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "sqlite/read_guard.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

class StoreReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bf-reader-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
    writer_ = MakeDatabase(path_, "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3);");
  }
  void TearDown() override {
    writer_.reset();
    std::error_code ignored;
    for (const auto& entry : fs::recursive_directory_iterator(dir_, ignored)) {
      fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
    fs::remove_all(dir_, ignored);
  }

  // A WAL database at `path` made by `sql`, kept open (as a running coordinator keeps it).
  static std::unique_ptr<Database> MakeDatabase(const std::string& path, const std::string& sql) {
    auto db = Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_TRUE((*db)->Exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; " + sql).ok());
    return std::move(*db);
  }

  std::unique_ptr<StoreReader> Reader(const std::string& path) {
    auto reader = StoreReader::Open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    return reader.ok() ? std::move(*reader) : nullptr;
  }

  static int64_t Count(StoreReader& reader, const std::string& table) {
    auto rows = reader.Query("select count(*) from " + table, 10);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->rows.at(0).at(0).get<int64_t>() : -1;
  }

  fs::path dir_;
  std::string path_;
  std::unique_ptr<Database> writer_;
};

TEST_F(StoreReaderTest, AttachAndReadsThroughItAreRefused) {
  const std::string other = (dir_ / "other.db").string();
  MakeDatabase(other, "CREATE TABLE secret(s TEXT); INSERT INTO secret VALUES ('key');");
  auto reader = Reader(path_);
  ASSERT_NE(reader, nullptr);
  auto attach = reader->Query("ATTACH '" + other + "' AS o", 10);
  ASSERT_FALSE(attach.ok());
  EXPECT_EQ(attach.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(attach.status().message().find("ATTACH, DETACH and VACUUM INTO are not allowed"),
            std::string::npos)
      << attach.status().message();
  auto through = reader->Query("select s from o.secret", 10);
  ASSERT_FALSE(through.ok());
  EXPECT_NE(through.status().message().find("no such table: o.secret"), std::string::npos)
      << through.status().message();
  // ATTACH of a file that is not there would have made it: nothing is made.
  const std::string made = (dir_ / "made.db").string();
  EXPECT_FALSE(reader->Query("attach database '" + made + "' as m", 10).ok());
  EXPECT_FALSE(fs::exists(made));
  EXPECT_FALSE(reader->Query("DETACH DATABASE main", 10).ok());
  EXPECT_EQ(Count(*reader, "t"), 3);
}

TEST_F(StoreReaderTest, OnlyReadsPass) {
  auto reader = Reader(path_);
  ASSERT_NE(reader, nullptr);
  for (const char* refused :
       {"delete from t", "insert into t values (4)", "create temp table x(y)", "drop table t",
        "BEGIN", "SAVEPOINT s", "PRAGMA journal_mode = delete", "PRAGMA user_version = 7",
        "PRAGMA query_only = 0", "VACUUM INTO '/tmp/bf-never.db'"}) {
    auto rows = reader->Query(refused, 10);
    ASSERT_FALSE(rows.ok()) << refused;
    EXPECT_EQ(rows.status().code(), StatusCode::kInvalidArgument) << refused;
    EXPECT_NE(rows.status().message().find("allowed"), std::string::npos)  // says what is
        << refused << ": " << rows.status().message();
  }
  EXPECT_NE(reader->Query("delete from t", 10).status().message().find("read-only"),
            std::string::npos);
  EXPECT_FALSE(fs::exists("/tmp/bf-never.db"));  // VACUUM INTO wrote no copy
  for (const char* read :
       {"select x from t",
        "with recursive c(n) as (select 1 union all select n + 1 from c where n < 5) select n from "
        "c",
        "select json_extract('{\"a\":1}', '$.a')", "select value from json_each('[1,2]')",
        "PRAGMA table_info(t)", "PRAGMA user_version", "select name from pragma_table_info('t')",
        "select name from sqlite_master"}) {
    auto rows = reader->Query(read, 10);
    EXPECT_TRUE(rows.ok()) << read << ": " << rows.status().ToString();
  }
  // The guard's reason never hides the one-statement rule.
  auto two = reader->Query("select 1; delete from t", 10);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("only one SQL statement"), std::string::npos)
      << two.status().message();
  EXPECT_EQ(Count(*reader, "t"), 3);
}

TEST_F(StoreReaderTest, PragmaRulesTellReportingFromSetting) {
  EXPECT_TRUE(ReadOnlyPragma("table_info", "t"));
  EXPECT_TRUE(ReadOnlyPragma("user_version", nullptr));
  EXPECT_FALSE(ReadOnlyPragma("user_version", "3"));
  EXPECT_FALSE(ReadOnlyPragma("writable_schema", nullptr));
  EXPECT_FALSE(ReadOnlyPragma("wal_checkpoint", nullptr));
}

TEST_F(StoreReaderTest, MissingFileAndNonDatabaseAreToldApart) {
  auto missing = StoreReader::Open((dir_ / "nope.db").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "nope.db"));
  const std::string text = (dir_ / "notes.txt").string();
  FILE* file = fopen(text.c_str(), "w");
  ASSERT_NE(file, nullptr);
  fputs("these are not the results you are looking for, not even close to a database header\n",
        file);
  fclose(file);
  auto not_db = StoreReader::Open(text);
  ASSERT_FALSE(not_db.ok());
  EXPECT_EQ(not_db.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_db.status().message().find("is not an SQLite database"), std::string::npos)
      << not_db.status().message();
}

// A store copied while its coordinator held it (or left by one that was killed): rows
// committed to the -wal only are read too.
TEST_F(StoreReaderTest, StoreCopiedWithItsLogReadsEveryRow) {
  ASSERT_TRUE(writer_->Exec("INSERT INTO t VALUES (4), (5)").ok());  // in the log only
  const fs::path copy = dir_ / "copy";
  fs::create_directories(copy);
  fs::copy_file(path_, copy / "results.db");
  fs::copy_file(path_ + "-wal", copy / "results.db-wal");
  ASSERT_FALSE(fs::exists(copy / "results.db-shm"));
  auto reader = Reader((copy / "results.db").string());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(Count(*reader, "t"), 5);
  reader.reset();
  EXPECT_TRUE(fs::exists(copy / "results.db-wal"));  // a reader never folds the log in
}

// In a directory SQLite may not write: without a log the file is read as it is; with
// one, the refusal says what to do. Root writes anywhere, so this needs another user.
TEST_F(StoreReaderTest, ReadOnlyDirectoryOpensOrSaysWhy) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write a read-only directory";
  writer_.reset();  // the last connection folds the log in and removes it
  const fs::path bare = dir_ / "bare", logged = dir_ / "logged";
  fs::create_directories(bare);
  fs::copy_file(path_, bare / "results.db");
  {
    auto writer = MakeDatabase(path_, "INSERT INTO t VALUES (4)");
    fs::create_directories(logged);
    fs::copy_file(path_, logged / "results.db");
    fs::copy_file(path_ + "-wal", logged / "results.db-wal");
  }
  for (const fs::path& d : {bare, logged}) {
    fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
  }
  auto reader = Reader((bare / "results.db").string());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(Count(*reader, "t"), 3);
  auto refused = StoreReader::Open((logged / "results.db").string());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("results.db-wal"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("wal_checkpoint"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace benchfleet
