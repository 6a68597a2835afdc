// What `benchfleet merge` checks of the stores it reads and the store it writes
// (cli/merge.h), before anything is written: every refusal names the file and the reason.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace benchfleet {

// What a file is, as far as merging goes.
struct StoreFacts {
  std::string path;
  int64_t schema_version = 0;  // PRAGMA user_version
  std::string store_id;        // store_identity.store_id
  bool merged = false;         // a store `benchfleet merge` wrote
};

// A store to merge: a benchfleet store of this benchfleet's schema version, with its
// store id, not a merged one, that no other process has open. InvalidArgument saying
// why not (NotFound and the reader's other errors turned into InvalidArgument where they
// are the user's file, FailedPrecondition for a log that cannot be read where it lies).
StatusOr<StoreFacts> CheckStoreToMerge(const std::string& path);

// The store `merge` appends to: one that an earlier merge wrote, of this schema version
// or an older one with sites (merged stores are migrated on the copy that replaces them).
// It may be open elsewhere: a reader keeps the file it opened, which the rename replaces.
StatusOr<StoreFacts> CheckMergedStore(const std::string& path);

// InvalidArgument when another process (or another connection of this one) has the
// SQLite file at `path` open or locked: SQLite's unix VFS holds a read lock on its lock
// bytes for as long as a connection to a store in WAL mode is open (every coordinator's
// store), and a write lock while a transaction writes a store in rollback mode. Asked
// with F_OFD_GETLK, which sees this process's own locks too. The probe opens and closes
// the file: closing drops every POSIX lock this process holds on it, so call it only
// while this process has no connection to the file. Ok for a missing file.
Status RefuseStoreInUse(const std::string& path);

// An SQLite URI that opens `path` read-only, for ATTACH: as immutable when no -wal file
// lies beside it and its directory cannot be written (where SQLite could not make the
// log's index; nothing can write such a store meanwhile), as StoreReader::Open does.
std::string ReadOnlyStoreUri(const std::string& path);

}  // namespace benchfleet
