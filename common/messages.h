// The messages a coordinator receives from clients, as typed structs
// (schemas/protocol.md); the agents' are in common/agent_messages.h. Decode()
// checks the envelope and top-level field types; these parsers check everything nested
// and every range, so a handler never reads raw peer JSON and never meets a surprise.
// Each error names the field ("heartbeat.running: must be null or {job_id, attempt}").
// The CLI sends each request with its ToJson (the fields; the client adds v, type and
// request_id), so the sender and the receiver name a field in one place.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_messages.h"
#include "common/limits.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// Longest submission id a client may send with a submit.
inline constexpr size_t kMaxSubmissionIdLength = 128;

// ---- client -> coordinator ----
struct SubmitRequest {
  nlohmann::json sweep;       // validated by ParseSweep
  std::string submission_id;  // empty: none; a resend with the same id is not a new sweep
  nlohmann::json ToJson() const;
};
StatusOr<SubmitRequest> ParseSubmit(const Message& message);

struct SweepRequest {  // status, cancel
  std::optional<int64_t> sweep_id;
  nlohmann::json ToJson() const;
};
StatusOr<SweepRequest> ParseSweepRequest(const Message& message);

struct ResultsRequest {
  std::optional<int64_t> sweep_id;
  int limit = kMaxReplyRows;
  nlohmann::json ToJson() const;
};
StatusOr<ResultsRequest> ParseResults(const Message& message);

struct QueryRequest {
  std::string sql;
  nlohmann::json ToJson() const;
};
StatusOr<QueryRequest> ParseQuery(const Message& message);

struct CalibrateRequest {
  std::vector<std::string> agents;  // empty: every agent
  nlohmann::json ToJson() const;
};
StatusOr<CalibrateRequest> ParseCalibrate(const Message& message);

struct PruneRequest {
  double samples_older_than_s = 0;  // >= 0
  nlohmann::json ToJson() const;
};
StatusOr<PruneRequest> ParsePrune(const Message& message);

// `baseline_reset`: a known step in the series of `host`, of `model`, or both (empty:
// any).
struct BaselineResetRequest {
  std::string host;
  std::string model;
  std::string note;
  nlohmann::json ToJson() const;  // empty members left out
};
StatusOr<BaselineResetRequest> ParseBaselineReset(const Message& message);

// `set_price`: what an hour of `host` costs from now on.
struct SetPriceRequest {
  std::string host;
  HostPrice price;
  nlohmann::json ToJson() const;
};
StatusOr<SetPriceRequest> ParseSetPrice(const Message& message);

// Longest cron expression and time-zone name a schedule may carry.
inline constexpr size_t kMaxCronLength = 256;
inline constexpr size_t kMaxTimeZoneLength = 64;

// `schedule` (schemas/protocol.md): one request type, its `action` saying which. The
// cron expression, the time zone and the sweep are checked by the coordinator
// (schedule/cron.h, ParseSweep); everything else here.
struct ScheduleRequest {
  enum class Action { kAdd, kList, kRemove, kRunNow, kHistory };
  Action action = Action::kList;
  std::string name;                        // add, remove, run_now; history (empty: all)
  std::string cron;                        // add
  std::string tz = "UTC";                  // add
  nlohmann::json sweep;                    // add
  bool overlap_queue = false;              // add: "queue" (else "skip")
  std::optional<double> start_deadline_s;  // add; none: one period
  int limit = kMaxReplyRows;               // history
  std::string submission_id;               // run_now: a resend with the same id fires once
  // Empty texts, a null sweep and no deadline are left out; the rest is written.
  nlohmann::json ToJson() const;
};
StatusOr<ScheduleRequest> ParseSchedule(const Message& message);
// An action's name on the wire ("add", "list", "remove", "run_now", "history").
std::string_view ScheduleActionName(ScheduleRequest::Action action);

}  // namespace benchfleet
