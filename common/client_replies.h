// The coordinator's replies to clients, as typed structs (schemas/protocol.md): the
// coordinator builds each with ToMessage, the CLI reads it with FromJson, so a field is
// named in one place for both. ToJson writes the whole body, v and type included:
// submitted, cancelled, pruned, rows and schedules here, status_reply in
// common/status_reply.h. Decode() checks the envelope and top-level field types;
// FromJson checks what is nested and every range, naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_messages.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// `submitted`: a sweep stored (or the one stored before under the same submission id),
// and a calibration queued.
struct SubmittedReply {
  static constexpr const char* kType = msg::kSubmitted;
  nlohmann::json request_id;
  int64_t sweep_id = 0;
  int64_t jobs = 0;                 // once all are stored
  std::vector<std::string> agents;  // pinned agents, sorted; empty: any matching agent
  bool existing = false;            // stored by an earlier send of the same submission
  int64_t excluded = 0;             // combinations the sweep's exclude list left out
  int64_t skipped = 0;              // combinations "invalid": "skip" left out
  nlohmann::json skipped_first = nlohmann::json::array();  // the first of them: {job, reason}
  nlohmann::json ToJson() const;
  static StatusOr<SubmittedReply> FromJson(const nlohmann::json& body);
};

// `cancelled`: a sweep's queued jobs dropped.
struct CancelledReply {
  static constexpr const char* kType = msg::kCancelled;
  nlohmann::json request_id;
  int64_t sweep_id = 0;
  int64_t jobs_cancelled = 0;
  nlohmann::json ToJson() const;
  static StatusOr<CancelledReply> FromJson(const nlohmann::json& body);
};

// `pruned`: old raw samples dropped, and the store's size before and after.
struct PrunedReply {
  static constexpr const char* kType = msg::kPruned;
  nlohmann::json request_id;
  int64_t results_pruned = 0;
  int64_t bytes_before = 0;
  int64_t bytes_after = 0;
  nlohmann::json ToJson() const;
  static StatusOr<PrunedReply> FromJson(const nlohmann::json& body);
};

// `rows`: a query's (or a results request's) columns and rows, or the one row a baseline
// reset or a new price stored.
struct RowsReply {
  static constexpr const char* kType = msg::kRows;
  nlohmann::json request_id;
  std::vector<std::string> columns;
  // Each an array of columns.size() values: integers, reals, strings or null.
  std::vector<nlohmann::json> rows;
  bool truncated = false;  // more rows matched than the limit let through
  nlohmann::json ToJson() const;
  static StatusOr<RowsReply> FromJson(const nlohmann::json& body);
  // Each row as an object {column: value}: read by name, never by position.
  std::vector<nlohmann::json> Objects() const;
};

// One schedule as `schedules` lists it.
struct ScheduleEntry {
  std::string name;
  std::string cron;
  std::string tz;
  std::string overlap;                     // "skip" or "queue"
  std::optional<double> start_deadline_s;  // none: one period
  std::string created_at;
  std::string handled_until;             // the latest slot handled
  std::optional<std::string> next_slot;  // UTC ISO 8601; none if its cron no longer parses
  std::optional<std::string> sweep_name;
  nlohmann::json ToJson() const;
};

// `schedules`: the schedules a `schedule` request's list (or remove) shows.
struct SchedulesReply {
  static constexpr const char* kType = msg::kSchedules;
  nlohmann::json request_id;
  std::vector<ScheduleEntry> schedules;
  nlohmann::json ToJson() const;
  static StatusOr<SchedulesReply> FromJson(const nlohmann::json& body);
};

}  // namespace benchfleet
