// Where the read commands (results, query, compare, regressions, recommend, report) get
// their rows: from the coordinator, which answers on its query thread, or from a store
// file this process opens itself (--db FILE, BENCHFLEET_DB), so that a copied
// results.db is read anywhere with no daemon. Either way the rows come from the same
// StoreReader (sqlite/reader.h): read-only, ATTACH and writes refused, at most
// kMaxReplyRows rows, each statement stopped after kQueryTimeLimitS. A command takes a
// Reads and never asks which one it has.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/client_replies.h"
#include "common/status.h"

namespace benchfleet {

struct ClientOptions;

class Reads {
 public:
  virtual ~Reads() = default;
  // Runs one read-only statement: its rows, `truncated` past kMaxReplyRows. A refused or
  // malformed statement is InvalidArgument.
  virtual StatusOr<RowsReply> Query(const std::string& sql) = 0;
  // The rows of result_summary, of one sweep or of every sweep, in the order `results`
  // shows them; NotFound for a sweep that does not exist.
  virtual StatusOr<RowsReply> ResultSummary(std::optional<int64_t> sweep_id) = 0;
};

// Reads through the coordinator at `client`. Connects on the first read, so a command
// checks its own input first; an unreachable coordinator is Unavailable.
std::unique_ptr<Reads> CoordinatorReads(const ClientOptions& client);

// Reads the store file at `path`, opened read-only on the first read. A missing file, or
// one that is not a benchfleet store (no result_summary view), is InvalidArgument: the
// user named the wrong file. A store in WAL mode whose log cannot be read where it lies
// is FailedPrecondition, saying what to do (StoreReader::Open).
std::unique_ptr<Reads> StoreFileReads(const std::string& path);

}  // namespace benchfleet
