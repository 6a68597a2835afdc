// Store (coordinator/store/store.h): opening and migrating, the read-only connection's rules,
// and group commit at the SQLite layer.
#include "coordinator/store/store_fixture.h"
#include "sqlite/schema.h"

namespace benchfleet {
namespace {

TEST_F(StoreTest, MigrationsApplyOnceAndDatabaseIsInWalMode) {
  EXPECT_EQ(*store_->SchemaVersion(), Migrations().back().version);
  auto db = Database::Open(path_, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->Text(0), "wal");
  store_.reset();
  auto reopened = Store::Open(path_);  // second open applies nothing and keeps data
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->SchemaVersion(), Migrations().back().version);
}

TEST_F(StoreTest, UserQueriesAreReadOnlyAndErrorsAreClear) {
  auto write = Query("delete from hosts", 10);
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.status().message().find("read-only"), std::string::npos);
  auto bad = Query("select nope from nowhere", 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no such table"), std::string::npos);
  auto many = Query(
      "with recursive c(x) as (select 1 union all select x+1 from c "
      "where x < 50) select x from c",
      10);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->rows.size(), 10u);
  EXPECT_TRUE(many->truncated);
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
  store_.reset();
  {
    auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 999").ok());
  }
  auto reopened = Store::Open(path_);
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.status().message().find("newer"), std::string::npos);
}

// docs/sites.md: each store draws an id of its own once, keeps it across restarts, and
// a store benchfleet merge wrote is not served.
TEST_F(StoreTest, AStoreKeepsItsIdentityAndAMergedOneIsRefused) {
  auto identity = Query("select store_id, merged from store_identity", 10);
  ASSERT_TRUE(identity.ok());
  ASSERT_EQ(identity->rows.size(), 1u);
  const std::string store_id = identity->rows[0][0].get<std::string>();
  EXPECT_EQ(store_id.size(), 32u);
  EXPECT_EQ(identity->rows[0][1], 0);
  store_.reset();
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  reopened->reset();
  auto other = Store::Open(path_ + ".other");
  ASSERT_TRUE(other.ok());
  other->reset();
  for (const std::string& path : {path_, path_ + ".other"}) {
    auto db = Database::Open(path, SQLITE_OPEN_READONLY);
    ASSERT_TRUE(db.ok());
    auto id = (*db)->Prepare("select store_id from store_identity");
    ASSERT_TRUE(id.ok() && *id->Step());
    EXPECT_EQ(id->Text(0) == store_id, path == path_) << "one id per store, kept: " << path;
  }
  {
    auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("UPDATE store_identity SET merged = 1").ok());
  }
  auto merged = Store::Open(path_);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("is a merged store"), std::string::npos)
      << merged.status().message();
}

TEST_F(StoreTest, QueriesMayHoldOneStatementOnly) {
  auto two = Query("select 1; delete from hosts", 10);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("only one SQL statement"), std::string::npos)
      << two.status().message();
  EXPECT_TRUE(Query("select 1; -- a comment\n", 10).ok());
  EXPECT_TRUE(Query("select 1;;  ", 10).ok());
}

// Group commit at the SQLite layer: what a round of the coordinator's loop relies on.
class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("bf-group-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    auto db = Database::Open(path_.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    ASSERT_TRUE(
        db_->Exec("PRAGMA journal_mode=WAL; CREATE TABLE t(x INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            .ok());
    auto reader = Database::Open(path_.string(), SQLITE_OPEN_READONLY);
    ASSERT_TRUE(reader.ok());
    reader_ = std::move(*reader);
  }
  void TearDown() override {
    db_.reset();
    reader_.reset();
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix);
  }
  Status Write(int x, const char* v) {
    Transaction tx(*db_);
    RETURN_IF_ERROR(tx.Begin());
    auto insert = db_->Prepare("INSERT INTO t VALUES (?1, ?2)");
    if (!insert.ok()) return insert.status();
    insert->Bind(1, x);
    if (v) insert->Bind(2, v);
    RETURN_IF_ERROR(insert->Run());
    return tx.Commit();
  }
  std::string Committed() {  // as another connection sees the table
    auto rows = reader_->Prepare("SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)");
    EXPECT_TRUE(rows.ok());
    EXPECT_TRUE(*rows->Step());
    return rows->Text(0);
  }
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Database> reader_;
};

TEST_F(GroupCommitTest, AGroupsWritesBecomeVisibleTogetherAndAFailedOneUndoesOnlyItself) {
  db_->OpenGroup();
  ASSERT_TRUE(Write(1, "a").ok());
  EXPECT_FALSE(Write(2, nullptr).ok());  // NOT NULL: this write alone is undone
  ASSERT_TRUE(Write(3, "c").ok());
  EXPECT_EQ(Committed(), "");  // nothing is visible before the group commits
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Committed(), "1,3");
  // Outside a group each write commits on its own.
  ASSERT_TRUE(Write(4, "d").ok());
  EXPECT_EQ(Committed(), "1,3,4");
  // A group with nothing written commits nothing and succeeds.
  db_->OpenGroup();
  EXPECT_TRUE(db_->CommitGroup().ok());
}

TEST_F(GroupCommitTest, AGroupSQLiteRolledBackKeepsNothingAndRefusesLaterWrites) {
  db_->OpenGroup();
  ASSERT_TRUE(Write(1, "a").ok());
  // What SQLite does by itself on a full disk or an I/O error: the whole transaction
  // is rolled back under the group.
  ASSERT_TRUE(db_->Exec("ROLLBACK").ok());
  Status after = Write(2, "b");
  EXPECT_FALSE(after.ok());  // it would otherwise commit on its own, outside the group
  EXPECT_NE(after.message().find("rolled back"), std::string::npos) << after.message();
  Status committed = db_->CommitGroup();
  EXPECT_FALSE(committed.ok());
  EXPECT_EQ(Committed(), "");
  // The next group starts afresh.
  db_->OpenGroup();
  ASSERT_TRUE(Write(5, "e").ok());
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Committed(), "5");
}

TEST_F(GroupCommitTest, AGroupThatCannotBeginFailsEachWriteAtOnceWithTheReason) {
  auto holder = Database::Open(path_.string(), SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE((*holder)->Exec("BEGIN IMMEDIATE").ok());  // another process holds the write lock
  db_->OpenGroup();
  Status first = Write(1, "a");
  EXPECT_FALSE(first.ok());
  EXPECT_NE(first.message().find("locked"), std::string::npos) << first.message();
  Status second = Write(2, "b");
  EXPECT_EQ(second.message(), first.message());  // no second busy wait
  EXPECT_TRUE(db_->CommitGroup().ok());          // nothing was written
  ASSERT_TRUE((*holder)->Exec("ROLLBACK").ok());
  ASSERT_TRUE(Write(3, "c").ok());
  EXPECT_EQ(Committed(), "3");
}

}  // namespace
}  // namespace benchfleet
