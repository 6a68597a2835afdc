#include "cli/reads.h"

#include "cli/client.h"
#include "cli/commands.h"
#include "common/limits.h"
#include "common/messages.h"
#include "sqlite/reader.h"

namespace benchfleet {
namespace {

class CoordinatorReadsImpl : public Reads {
 public:
  explicit CoordinatorReadsImpl(const ClientOptions& client) : options_(client) {}

  StatusOr<RowsReply> Query(const std::string& sql) override {
    return Call(msg::kQuery, QueryRequest{sql}.ToJson());
  }

  StatusOr<RowsReply> ResultSummary(std::optional<int64_t> sweep_id) override {
    ResultsRequest request;
    request.sweep_id = sweep_id;
    return Call(msg::kResults, request.ToJson());
  }

 private:
  StatusOr<RowsReply> Call(const std::string& type, json fields) {
    if (!client_) {
      ASSIGN_OR_RETURN(client_,
                       CoordinatorClient::Connect(options_.coordinator, options_.timeout_ms,
                                                  options_.curve ? &*options_.curve : nullptr));
    }
    ASSIGN_OR_RETURN(Message reply, client_->Call(type, std::move(fields)));
    if (reply.type != msg::kRows) return Internal("expected a rows reply, got " + reply.type);
    return RowsReply::FromJson(reply.body);
  }

  ClientOptions options_;
  std::unique_ptr<CoordinatorClient> client_;
};

class StoreFileReadsImpl : public Reads {
 public:
  explicit StoreFileReadsImpl(std::string path) : path_(std::move(path)) {}

  StatusOr<RowsReply> Query(const std::string& sql) override {
    RETURN_IF_ERROR(OpenOnce());
    ASSIGN_OR_RETURN(Rows rows, reader_->Query(sql, kMaxReplyRows));
    return Reply(std::move(rows));
  }

  StatusOr<RowsReply> ResultSummary(std::optional<int64_t> sweep_id) override {
    RETURN_IF_ERROR(OpenOnce());
    ASSIGN_OR_RETURN(Rows rows, reader_->ResultSummary(sweep_id, kMaxReplyRows));
    return Reply(std::move(rows));
  }

 private:
  static RowsReply Reply(Rows rows) {
    return RowsReply{nullptr, std::move(rows.columns), std::move(rows.rows), rows.truncated};
  }

  Status OpenOnce() {
    if (reader_) return Status::Ok();
    auto reader = StoreReader::Open(path_);
    if (!reader.ok()) {
      const Status& why = reader.status();
      // The file the user named is missing or no database: their input, not ours.
      if (why.code() == StatusCode::kNotFound || why.code() == StatusCode::kInvalidArgument) {
        return InvalidArgument("--db: " + why.message());
      }
      return why;
    }
    // Any SQLite file opens; a benchfleet store is one the coordinator made.
    ASSIGN_OR_RETURN(Rows views,
                     (*reader)->Query("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND "
                                      "name = 'result_summary'",
                                      1));
    if (views.rows.empty() || views.rows[0][0] != 1) {
      return InvalidArgument(
          "--db: " + path_ +
          " is not a benchfleet results store (it has no result_summary view); give "
          "the results.db a benchfleet-coordinator writes (its --db)");
    }
    reader_ = std::move(*reader);
    return Status::Ok();
  }

  std::string path_;
  std::unique_ptr<StoreReader> reader_;
};

}  // namespace

std::unique_ptr<Reads> CoordinatorReads(const ClientOptions& client) {
  return std::make_unique<CoordinatorReadsImpl>(client);
}

std::unique_ptr<Reads> StoreFileReads(const std::string& path) {
  return std::make_unique<StoreFileReadsImpl>(path);
}

}  // namespace benchfleet
