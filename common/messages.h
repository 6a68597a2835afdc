// The messages a coordinator receives, as typed structs (schemas/protocol.md). Decode()
// checks the envelope and top-level field types; these parsers check everything nested
// and every range, so a handler never reads raw peer JSON and never meets a surprise.
// Each error names the field ("heartbeat.running: must be null or {job_id, attempt}").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/capabilities.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// Longest agent name accepted; names are letters, digits, '-', '_' and '.'.
inline constexpr size_t kMaxAgentNameLength = 128;
// Longest submission id a client may send with a submit.
inline constexpr size_t kMaxSubmissionIdLength = 128;

// True for a valid agent name (see kMaxAgentNameLength).
bool ValidAgentName(const std::string& name);

struct JobAttempt {
  int64_t job_id = 0;
  int attempt = 0;
};

// ---- coordinator -> agent ----
// One rank of a spread gang, as a job offer's `gang` names it: rank 0 gets no store (its
// agent starts one and reports it with `rendezvous`), the others get rank 0's.
struct GangRole {
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string store;  // "HOST:PORT"; empty for rank 0
};
StatusOr<GangRole> ParseGangRole(const nlohmann::json& gang);

// ---- agent -> coordinator ----
// What an hour of a host costs (docs/results.md, Cost).
struct HostPrice {
  double per_hour = 0;     // in [0, kMaxPricePerHour]
  std::string currency;    // three capital letters (ISO 4217)
};
// `per_hour` and `currency` of `value` (`context` names it in errors); a missing currency
// is kDefaultCurrency.
StatusOr<HostPrice> ParseHostPrice(const nlohmann::json& per_hour, const nlohmann::json& currency,
                                   const std::string& context);

struct RegisterRequest {
  std::string agent;
  std::vector<std::string> tags;
  Capabilities capabilities;
  bool calibrate = false;
  std::vector<JobAttempt> spooled;
  std::optional<HostPrice> price;  // the agent's --price-per-hour
};
StatusOr<RegisterRequest> ParseRegister(const Message& message);

struct HeartbeatRequest {
  std::optional<JobAttempt> running;
};
StatusOr<HeartbeatRequest> ParseHeartbeat(const Message& message);

// The envelope of a result; the result itself is parsed by ParseWorkerResult, after the
// envelope is known, so that even a result with bad contents can be answered by its ids.
struct ResultReport {
  JobAttempt job;
  const nlohmann::json* result = nullptr;  // points into the message
};
StatusOr<ResultReport> ParseResultReport(const Message& message);

// Rank 0's agent of a spread gang names the store it started (schemas/protocol.md).
struct RendezvousReport {
  JobAttempt job;
  std::string store_host;  // as the ranks will dial it
  int64_t store_port = 0;
};
StatusOr<RendezvousReport> ParseRendezvous(const Message& message);

struct ErrorReport {
  std::string code;
  std::string message;
  std::optional<JobAttempt> job;  // an agent's refusal of a job offer names the job
};
StatusOr<ErrorReport> ParseErrorReport(const Message& message);

// ---- client -> coordinator ----
struct SubmitRequest {
  nlohmann::json sweep;           // validated by ParseSweep
  std::string submission_id;      // empty: none; a resend with the same id is not a new sweep
};
StatusOr<SubmitRequest> ParseSubmit(const Message& message);

struct SweepRequest {  // status, cancel
  std::optional<int64_t> sweep_id;
};
StatusOr<SweepRequest> ParseSweepRequest(const Message& message);

struct ResultsRequest {
  std::optional<int64_t> sweep_id;
  int limit = 0;
};
StatusOr<ResultsRequest> ParseResults(const Message& message);

struct QueryRequest {
  std::string sql;
};
StatusOr<QueryRequest> ParseQuery(const Message& message);

struct CalibrateRequest {
  std::vector<std::string> agents;
};
StatusOr<CalibrateRequest> ParseCalibrate(const Message& message);

struct PruneRequest {
  double samples_older_than_s = 0;  // >= 0
};
StatusOr<PruneRequest> ParsePrune(const Message& message);

// `baseline_reset`: a known step in the series of `host`, of `model`, or both (empty:
// any).
struct BaselineResetRequest {
  std::string host;
  std::string model;
  std::string note;
};
StatusOr<BaselineResetRequest> ParseBaselineReset(const Message& message);

// `set_price`: what an hour of `host` costs from now on.
struct SetPriceRequest {
  std::string host;
  HostPrice price;
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
  std::string name;                   // add, remove, run_now; history (empty: all)
  std::string cron;                   // add
  std::string tz = "UTC";             // add
  nlohmann::json sweep;               // add
  bool overlap_queue = false;         // add: "queue" (else "skip")
  std::optional<double> start_deadline_s;  // add; none: one period
  int limit = 0;                      // history
  std::string submission_id;          // run_now: a resend with the same id fires once
};
StatusOr<ScheduleRequest> ParseSchedule(const Message& message);

}  // namespace benchfleet
