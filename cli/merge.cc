// `benchfleet merge` (cli/merge.h): the checks, the store written beside OUT, one site
// at a time, and the rename that puts it in place.
#include "cli/merge.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <iostream>

#include "cli/command_support.h"
#include "cli/commands.h"
#include "cli/merge_sources.h"
#include "cli/merge_tables.h"
#include "common/clock.h"
#include "common/log.h"
#include "sqlite/schema.h"
#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

constexpr size_t kMaxSiteName = 64;

bool Exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

bool ValidSiteName(const std::string& name) {
  if (name.empty() || name.size() > kMaxSiteName) return false;
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

Status BadSiteName(const std::string& name, const MergeInput& input) {
  return InvalidArgument("site name \"" + name + "\" (of " + input.path + "): 1 to " +
                         std::to_string(kMaxSiteName) +
                         " letters, digits, '.', '_' or '-'; name it: NAME=" + input.path);
}

// The store being written beside OUT: removed when the merge fails, whatever failed.
class PartialStore {
 public:
  explicit PartialStore(std::string path) : path_(std::move(path)) { Remove(); }
  ~PartialStore() {
    if (!kept_) Remove();
  }
  const std::string& path() const { return path_; }
  void Keep() { kept_ = true; }

 private:
  void Remove() {
    std::error_code error;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"})
      std::filesystem::remove(path_ + suffix, error);
  }
  std::string path_;
  bool kept_ = false;
};

// What a file was when a merge read it: another merge renamed over it since, when it is
// not what it was.
struct FileVersion {
  bool exists = false;
  ino_t inode = 0;
  off_t size = 0;
  struct timespec modified = {};
  bool operator==(const FileVersion& o) const {
    return exists == o.exists && inode == o.inode && size == o.size &&
           modified.tv_sec == o.modified.tv_sec && modified.tv_nsec == o.modified.tv_nsec;
  }
};
FileVersion VersionOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_ino, st.st_size, st.st_mtim};
}

// The whole of the store at `from` into `to`'s connection (SQLite's online backup: one
// consistent snapshot, the write-ahead log included).
Status CopyStore(const std::string& from, Database& to) {
  ASSIGN_OR_RETURN(auto source, Database::Open(from, SQLITE_OPEN_READONLY));
  sqlite3_backup* backup = sqlite3_backup_init(to.handle(), "main", source->handle(), "main");
  if (backup == nullptr) return Unavailable("cannot copy " + from + ": " + to.LastError());
  const int stepped = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (stepped != SQLITE_DONE)
    return Unavailable("cannot copy " + from + ": " + std::string(sqlite3_errstr(stepped)));
  return Status::Ok();
}

// Makes the file (or directory) at `path` durable before it is relied on.
Status Sync(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + path + " to sync it");
  const bool synced = fsync(fd) == 0;
  close(fd);
  return synced ? Status::Ok() : Unavailable("cannot sync " + path + " to disk");
}

// The site `input` is in the merged store: found by its store id (its name kept from its
// first merge), or added under the name given or its file's.
StatusOr<SiteRow> SiteFor(Database& db, const StoreFacts& facts, const MergeInput& input) {
  const std::string source = std::filesystem::absolute(input.path).string();
  const std::string now = UtcNowIso8601();
  ASSIGN_OR_RETURN(auto known, db.Prepare("SELECT site_id, name FROM sites WHERE store_id = ?1"));
  known.Bind(1, facts.store_id);
  ASSIGN_OR_RETURN(bool found, known.Step());
  SiteRow site;
  if (found) {
    site = {known.Int(0), known.Text(1)};
    if (!input.site.empty() && input.site != site.name) {
      return InvalidArgument("it was merged before as site " + site.name +
                             ": give it that name, or none");
    }
    ASSIGN_OR_RETURN(auto seen, db.Prepare("UPDATE sites SET source = ?2, merged_at = ?3, "
                                           "schema_version = ?4 WHERE site_id = ?1"));
    RETURN_IF_ERROR(seen.Bind(1, site.site_id)
                        .Bind(2, source)
                        .Bind(3, now)
                        .Bind(4, facts.schema_version)
                        .Run());
    return site;
  }
  site.name = input.site.empty() ? std::filesystem::path(input.path).stem().string() : input.site;
  if (!ValidSiteName(site.name)) return BadSiteName(site.name, input);
  ASSIGN_OR_RETURN(auto taken, db.Prepare("SELECT source FROM sites WHERE name = ?1"));
  taken.Bind(1, site.name);
  ASSIGN_OR_RETURN(bool clash, taken.Step());
  if (clash) {
    return InvalidArgument("site name " + site.name + " is taken by another store (merged from " +
                           taken.Text(0) + "); name this one: NAME=" + input.path);
  }
  RETURN_IF_ERROR(InsertRow(db, "sites",
                            {{"store_id", facts.store_id},
                             {"name", site.name},
                             {"source", source},
                             {"first_merged_at", now},
                             {"merged_at", now},
                             {"schema_version", facts.schema_version}}));
  site.site_id = db.LastInsertRowid();
  return site;
}

// One site's rows into `db`, in one transaction that reads one snapshot of its store.
Status MergeSite(Database& db, const StoreFacts& facts, const MergeInput& input,
                 SiteMerged* merged) {
  ASSIGN_OR_RETURN(auto attach, db.Prepare("ATTACH ?1 AS src"));
  Status attached = attach.Bind(1, ReadOnlyStoreUri(input.path)).Run();
  if (!attached.ok()) return Unavailable("cannot read " + input.path + ": " + attached.message());
  Status done = db.Exec("BEGIN");
  StatusOr<SiteRow> site = done.ok() ? SiteFor(db, facts, input) : StatusOr<SiteRow>(done);
  if (site.ok()) {
    merged->site = site->name;
    done = MergeSiteRows(db, *site, merged);
  } else {
    done = site.status();
  }
  if (done.ok()) done = db.Exec("COMMIT");
  if (!done.ok()) (void)db.Exec("ROLLBACK");
  (void)db.Exec("DETACH src");
  if (done.ok()) return done;
  return Status(done.code(), input.path + ": " + done.message());
}

StatusOr<int64_t> CountOf(Database& db, const std::string& table) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT count(*) FROM " + table));
  RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
}

}  // namespace

MergeInput ParseMergeInput(const std::string& argument) {
  const size_t eq = argument.find('=');
  if (eq == std::string::npos || Exists(argument)) return {argument, ""};
  return {argument.substr(eq + 1), argument.substr(0, eq)};
}

StatusOr<MergeSummary> MergeStores(const std::string& out, const std::vector<MergeInput>& inputs) {
  if (inputs.empty()) return InvalidArgument("merge: name at least one store to merge");
  // Every input is checked before anything is written.
  std::vector<StoreFacts> sources;
  for (const MergeInput& input : inputs) {
    if (!input.site.empty() && !ValidSiteName(input.site)) return BadSiteName(input.site, input);
    if (Exists(out) && SameFile(input.path, out))
      return InvalidArgument(input.path + " is OUT itself: merge writes OUT from the others");
    ASSIGN_OR_RETURN(StoreFacts facts, CheckStoreToMerge(input.path));
    sources.push_back(std::move(facts));
  }
  const FileVersion read = VersionOf(out);
  const bool appending = read.exists;
  if (appending) RETURN_IF_ERROR(CheckMergedStore(out).status());

  PartialStore partial(out + ".merging-" + std::to_string(getpid()));
  auto opened =
      Database::Open(partial.path(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI);
  if (!opened.ok()) {
    return Unavailable("cannot write beside " + out + ": " + opened.status().message());
  }
  Database& db = **opened;
  if (appending) RETURN_IF_ERROR(CopyStore(out, db));
  // The store is renamed into place whole or not at all: nothing need be durable until it
  // is complete (Sync below). Its rollback journal stays on disk, not in memory, where it
  // would grow with the pages of a large store that a site's rows touch.
  RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = OFF"));
  RETURN_IF_ERROR(MigrateSchema(db, partial.path()));
  RETURN_IF_ERROR(AddDeclaredColumns(db, /*log=*/false));
  RETURN_IF_ERROR(RecreateViews(db));
  RETURN_IF_ERROR(db.Exec("UPDATE store_identity SET merged = 1"));

  MergeSummary summary;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SiteMerged merged;
    merged.path = inputs[i].path;
    RETURN_IF_ERROR(MergeSite(db, sources[i], inputs[i], &merged));
    summary.merged.push_back(std::move(merged));
  }
  ASSIGN_OR_RETURN(summary.sites, CountOf(db, "sites"));
  ASSIGN_OR_RETURN(summary.sweeps, CountOf(db, "sweeps"));
  ASSIGN_OR_RETURN(summary.hosts, CountOf(db, "hosts"));
  ASSIGN_OR_RETURN(summary.results, CountOf(db, "results"));
  opened->reset();  // closed before it is synced and moved
  RETURN_IF_ERROR(Sync(partial.path()));
  if (!(VersionOf(out) == read)) {
    return Unavailable(out +
                       " changed while this merge ran (another merge into it?); it is "
                       "left as that made it: merge again");
  }
  std::error_code error;
  std::filesystem::rename(partial.path(), out, error);
  if (error) return Unavailable("cannot move the merged store to " + out + ": " + error.message());
  partial.Keep();
  const std::filesystem::path dir = std::filesystem::absolute(out).parent_path();
  RETURN_IF_ERROR(Sync(dir.string()));
  return summary;
}

int MergeCommand(const std::string& out, const std::vector<std::string>& stores) {
  // The merged store's schema steps are not news to the user; warnings are (a column
  // kept that this benchfleet does not declare).
  SetLogLevel(LogLevel::kWarn);
  std::vector<MergeInput> inputs;
  for (const std::string& store : stores) inputs.push_back(ParseMergeInput(store));
  auto summary = MergeStores(out, inputs);
  if (!summary.ok()) return Fail(summary.status());
  for (const SiteMerged& m : summary->merged) {
    std::cout << "site " << m.site << " (" << m.path << "): ";
    if (m.sweeps == 0 && m.hosts_added == 0) {
      std::cout << "nothing new";
    } else {
      std::cout << m.sweeps << " sweep(s), " << m.jobs << " job(s), " << m.results << " result(s), "
                << m.hosts_added << " new host(s)";
    }
    if (m.hosts_matched > 0) std::cout << "; " << m.hosts_matched << " host(s) already known";
    if (m.sweeps_before > 0) std::cout << "; " << m.sweeps_before << " sweep(s) merged before";
    if (m.sweeps_running > 0) {
      std::cout << "; " << m.sweeps_running
                << " sweep(s) still running there, left out until they end";
    }
    std::cout << "\n";
  }
  std::cout << out << ": " << summary->sites << " site(s), " << summary->sweeps << " sweep(s), "
            << summary->hosts << " host(s), " << summary->results << " result(s)\n";
  return 0;
}

}  // namespace benchfleet
