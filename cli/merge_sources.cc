#include "cli/merge_sources.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "sqlite/reader.h"
#include "sqlite/schema.h"

namespace benchfleet {
namespace {

// Where SQLite's unix VFS takes its locks on a database file (os_unix.c, "the locking
// protocol"): the pending byte at 1 GiB, the reserved byte after it, then 510 bytes of
// shared locks. The bytes are never data: the page that holds them is left unused.
constexpr off_t kSqliteLockOffset = 0x40000000;
constexpr off_t kSqliteLockBytes = 512;

// The store's facts, read on a read-only connection (sqlite/reader.h), which also says
// when the file is missing or not an SQLite database.
StatusOr<StoreFacts> ReadFacts(const std::string& path) {
  auto opened = StoreReader::Open(path);
  if (!opened.ok()) {
    const Status& why = opened.status();
    if (why.code() == StatusCode::kNotFound || why.code() == StatusCode::kInvalidArgument)
      return InvalidArgument(why.message());
    return why;
  }
  StoreReader& reader = **opened;
  auto first = [&](const std::string& sql) -> StatusOr<nlohmann::json> {
    ASSIGN_OR_RETURN(Rows rows, reader.Query(sql, 1));
    return rows.rows.empty() ? nlohmann::json() : rows.rows[0][0];
  };
  ASSIGN_OR_RETURN(nlohmann::json application_id, first("PRAGMA application_id"));
  ASSIGN_OR_RETURN(nlohmann::json version, first("PRAGMA user_version"));
  StoreFacts facts;
  facts.path = path;
  facts.schema_version = version.is_number_integer() ? version.get<int64_t>() : 0;
  const int64_t id = application_id.is_number_integer() ? application_id.get<int64_t>() : 0;
  if (id == 0 && facts.schema_version >= 1 && facts.schema_version <= kLastLegacyVersion) {
    return InvalidArgument(path + " is a store from before schema version 1 (its old step " +
                           std::to_string(facts.schema_version) +
                           "): start benchfleet-coordinator on it once, which converts it, "
                           "then merge it");
  }
  if (id != kStoreApplicationId) {
    return InvalidArgument(path + " is not a benchfleet store (" +
                           (id == 0 ? std::string("an SQLite database without its tables")
                                    : "application_id " + std::to_string(id)) +
                           "); give the results.db a benchfleet-coordinator writes (its --db)");
  }
  const int latest = Migrations().back().version;
  if (facts.schema_version > latest) {
    return InvalidArgument(path + " has schema version " + std::to_string(facts.schema_version) +
                           ", newer than this benchfleet's (" + std::to_string(latest) +
                           "): merge it with a newer benchfleet");
  }
  if (facts.schema_version < kSitesVersion) return facts;  // no identity yet: the caller says
  ASSIGN_OR_RETURN(Rows identity, reader.Query("SELECT store_id, merged FROM store_identity", 1));
  if (identity.rows.empty() || !identity.rows[0][0].is_string()) {
    return InvalidArgument(path + " has no store id (its table store_identity is empty)");
  }
  facts.store_id = identity.rows[0][0].get<std::string>();
  facts.merged = identity.rows[0][1] == 1;
  return facts;
}

bool Exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

}  // namespace

StatusOr<StoreFacts> CheckStoreToMerge(const std::string& path) {
  RETURN_IF_ERROR(RefuseStoreInUse(path));
  ASSIGN_OR_RETURN(StoreFacts facts, ReadFacts(path));
  const int latest = Migrations().back().version;
  if (facts.schema_version < latest) {
    // A copy migrated here would draw a store id of its own each time (before version
    // kSitesVersion) and be merged again as a new site: the store's own coordinator
    // migrates it, once, in place.
    return InvalidArgument(path + " has schema version " + std::to_string(facts.schema_version) +
                           ", older than this benchfleet's (" + std::to_string(latest) +
                           "): start a benchfleet-coordinator of this version on it once (it "
                           "migrates a store as it opens it), then merge it");
  }
  if (facts.merged) {
    return InvalidArgument(path +
                           " is a merged store: merge more stores into it (as OUT), or merge the "
                           "sites' own stores");
  }
  return facts;
}

StatusOr<StoreFacts> CheckMergedStore(const std::string& path) {
  // Whoever reads it meanwhile (a dashboard's --db) keeps the file it opened: the merged
  // store replaces it by a rename. So it may be open; a coordinator never serves it.
  ASSIGN_OR_RETURN(StoreFacts facts, ReadFacts(path));
  if (facts.schema_version < kSitesVersion || !facts.merged) {
    return InvalidArgument(path +
                           " is a coordinator's store, not one benchfleet merge wrote: merge "
                           "never writes a coordinator's store; name a new file to write");
  }
  return facts;
}

Status RefuseStoreInUse(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Ok();  // missing or unreadable: the open that follows says so
  struct flock lock = {};
  lock.l_type = F_WRLCK;  // conflicts with any lock another holder has there
  lock.l_whence = SEEK_SET;
  lock.l_start = kSqliteLockOffset;
  lock.l_len = kSqliteLockBytes;
  const int asked = fcntl(fd, F_OFD_GETLK, &lock);
  close(fd);
  if (asked != 0 || lock.l_type == F_UNLCK) return Status::Ok();
  const std::string holder =
      lock.l_pid > 0 ? "process " + std::to_string(lock.l_pid) : std::string("another open file");
  return InvalidArgument(path + " is open in " + holder +
                         " (a coordinator serving it, or a program reading or writing it): stop "
                         "its coordinator first, or merge a copy: sqlite3 " +
                         path + " \".backup COPY.db\"");
}

std::string ReadOnlyStoreUri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {  // RFC 3986: all but unreserved characters and '/' escaped
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      uri += escaped;
    }
  }
  uri += "?mode=ro";
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  if (!Exists(path + "-wal") && access(dir.c_str(), W_OK) != 0) uri += "&immutable=1";
  return uri;
}

}  // namespace benchfleet
