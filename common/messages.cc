#include "common/messages.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>

#include "common/limits.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Longest SQL text a query may carry.
constexpr size_t kMaxSqlLength = 64 * 1024;

// Each schedule action by the name it has on the wire.
constexpr std::pair<std::string_view, ScheduleRequest::Action> kScheduleActions[] = {
    {"add", ScheduleRequest::Action::kAdd},
    {"list", ScheduleRequest::Action::kList},
    {"remove", ScheduleRequest::Action::kRemove},
    {"run_now", ScheduleRequest::Action::kRunNow},
    {"history", ScheduleRequest::Action::kHistory}};

// Optional positive integer field `key` (Decode checked it is an integer).
StatusOr<std::optional<int64_t>> PositiveId(const Message& message, const char* key) {
  auto it = message.body.find(key);
  if (it == message.body.end()) return std::optional<int64_t>();
  if (!it->is_number_integer() || it->get<int64_t>() < 1) {
    return InvalidArgument(message.type + "." + key + ": must be a positive integer, got " +
                           ShownValue(*it));
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

}  // namespace

StatusOr<SubmitRequest> ParseSubmit(const Message& message) {
  SubmitRequest out;
  out.sweep = message.body["sweep"];
  auto id = message.body.find("submission_id");
  if (id != message.body.end() && !id->is_null()) {
    if (!id->is_string() || id->get_ref<const std::string&>().empty() ||
        id->get_ref<const std::string&>().size() > kMaxSubmissionIdLength) {
      return InvalidArgument("submit.submission_id: must be a non-empty string of at most " +
                             std::to_string(kMaxSubmissionIdLength) + " characters");
    }
    out.submission_id = id->get<std::string>();
  }
  return out;
}

StatusOr<SweepRequest> ParseSweepRequest(const Message& message) {
  SweepRequest out;
  ASSIGN_OR_RETURN(out.sweep_id, PositiveId(message, "sweep_id"));
  return out;
}

StatusOr<ResultsRequest> ParseResults(const Message& message) {
  ResultsRequest out;
  ASSIGN_OR_RETURN(out.sweep_id, PositiveId(message, "sweep_id"));
  out.limit = kMaxReplyRows;
  auto limit = message.body.find("limit");
  if (limit != message.body.end()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1 ||
        limit->get<int64_t>() > kMaxReplyRows) {
      return InvalidArgument("results.limit: must be an integer from 1 to " +
                             std::to_string(kMaxReplyRows) + ", got " + ShownValue(*limit));
    }
    out.limit = static_cast<int>(limit->get<int64_t>());
  }
  return out;
}

StatusOr<QueryRequest> ParseQuery(const Message& message) {
  QueryRequest out;
  out.sql = message.body["sql"].get<std::string>();
  if (out.sql.size() > kMaxSqlLength) {
    return InvalidArgument("query.sql: longer than " + std::to_string(kMaxSqlLength) + " bytes");
  }
  return out;
}

StatusOr<CalibrateRequest> ParseCalibrate(const Message& message) {
  CalibrateRequest out;
  auto agents = message.body.find("agents");
  if (agents == message.body.end()) return out;
  for (size_t i = 0; i < agents->size(); ++i) {
    const json& name = (*agents)[i];
    if (!name.is_string() || !ValidAgentName(name.get<std::string>())) {
      return InvalidArgument("calibrate.agents[" + std::to_string(i) + "]: must be an agent name");
    }
    out.agents.push_back(name.get<std::string>());
  }
  return out;
}

StatusOr<BaselineResetRequest> ParseBaselineReset(const Message& message) {
  BaselineResetRequest out;
  const json& body = message.body;
  auto text = [&](const char* key, size_t max_length, std::string* into) -> Status {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return Status::Ok();
    if (!it->is_string() || it->get_ref<const std::string&>().size() > max_length) {
      return InvalidArgument(std::string("baseline_reset.") + key +
                             ": must be a string of at most " + std::to_string(max_length) +
                             " characters, got " + ShownValue(*it));
    }
    *into = it->get<std::string>();
    return Status::Ok();
  };
  RETURN_IF_ERROR(text("host", kMaxAgentNameLength, &out.host));
  if (!out.host.empty() && !ValidAgentName(out.host)) {
    return InvalidArgument("baseline_reset.host: must be an agent name, got " +
                           ShownValue(body["host"]));
  }
  RETURN_IF_ERROR(text("model", 128, &out.model));
  RETURN_IF_ERROR(text("note", 1024, &out.note));
  return out;
}

StatusOr<SetPriceRequest> ParseSetPrice(const Message& message) {
  const json& body = message.body;
  SetPriceRequest out;
  out.host = body["host"].get<std::string>();
  if (!ValidAgentName(out.host))
    return InvalidArgument("set_price.host: must be an agent name, got " +
                           ShownValue(body["host"]));
  ASSIGN_OR_RETURN(out.price, ParseHostPrice(body["per_hour"],
                                             body.contains("currency") ? body["currency"] : json(),
                                             "set_price"));
  return out;
}

StatusOr<ScheduleRequest> ParseSchedule(const Message& message) {
  const json& body = message.body;
  ScheduleRequest out;
  const std::string action = body["action"].get<std::string>();
  auto known = std::find_if(std::begin(kScheduleActions), std::end(kScheduleActions),
                            [&](const auto& a) { return a.first == action; });
  if (known == std::end(kScheduleActions)) {
    return InvalidArgument("schedule.action: must be add, list, remove, run_now or history, got " +
                           ShownValue(body["action"]));
  }
  out.action = known->second;
  using Action = ScheduleRequest::Action;
  // A field of the wrong type is refused whatever the action, never ignored.
  auto text = [&](const char* key, size_t max_length, bool required, std::string* into) -> Status {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) {
      return required ? InvalidArgument(std::string("schedule.") + key + ": required by action " +
                                        action)
                      : Status::Ok();
    }
    if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
        it->get_ref<const std::string&>().size() > max_length) {
      return InvalidArgument(std::string("schedule.") + key +
                             ": must be a non-empty string of at most " +
                             std::to_string(max_length) + " characters, got " + ShownValue(*it));
    }
    *into = it->get<std::string>();
    return Status::Ok();
  };
  const bool named =
      out.action == Action::kAdd || out.action == Action::kRemove || out.action == Action::kRunNow;
  RETURN_IF_ERROR(text("name", kMaxAgentNameLength, named, &out.name));
  if (!out.name.empty() && !ValidAgentName(out.name)) {
    return InvalidArgument("schedule.name: letters, digits, '-', '_' and '.' only, got " +
                           ShownValue(body["name"]));
  }
  const bool add = out.action == Action::kAdd;
  RETURN_IF_ERROR(text("cron", kMaxCronLength, add, &out.cron));
  RETURN_IF_ERROR(text("tz", kMaxTimeZoneLength, false, &out.tz));
  RETURN_IF_ERROR(text("submission_id", kMaxSubmissionIdLength, false, &out.submission_id));
  auto sweep = body.find("sweep");
  if (sweep != body.end() && !sweep->is_null()) {
    if (!sweep->is_object())
      return InvalidArgument("schedule.sweep: must be an object, got " + ShownValue(*sweep));
    out.sweep = *sweep;
  } else if (add) {
    return InvalidArgument("schedule.sweep: required by action add");
  }
  std::string overlap = "skip";
  RETURN_IF_ERROR(text("overlap", 8, false, &overlap));
  if (overlap != "skip" && overlap != "queue") {
    return InvalidArgument("schedule.overlap: must be \"skip\" or \"queue\", got " +
                           ShownValue(body["overlap"]));
  }
  out.overlap_queue = overlap == "queue";
  auto deadline = body.find("start_deadline_s");
  if (deadline != body.end() && !deadline->is_null()) {
    // From a second to a year: a firing later than that after its slot is no firing.
    if (!deadline->is_number() || !(deadline->get<double>() >= 1) ||
        deadline->get<double>() > 3.2e7) {
      return InvalidArgument(
          "schedule.start_deadline_s: must be a number of seconds from 1 to 3.2e7, got " +
          ShownValue(*deadline));
    }
    out.start_deadline_s = deadline->get<double>();
  }
  out.limit = kMaxReplyRows;
  auto limit = body.find("limit");
  if (limit != body.end() && !limit->is_null()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1 ||
        limit->get<int64_t>() > kMaxReplyRows) {
      return InvalidArgument("schedule.limit: must be an integer from 1 to " +
                             std::to_string(kMaxReplyRows) + ", got " + ShownValue(*limit));
    }
    out.limit = static_cast<int>(limit->get<int64_t>());
  }
  return out;
}

StatusOr<PruneRequest> ParsePrune(const Message& message) {
  PruneRequest out;
  out.samples_older_than_s = message.body.at("samples_older_than_s").get<double>();
  // Up to 1,000 years: beyond that SQLite's date arithmetic has nothing to say.
  if (!(out.samples_older_than_s >= 0) || out.samples_older_than_s > 3.2e10) {
    return InvalidArgument("prune.samples_older_than_s: must be from 0 to 3.2e10 seconds");
  }
  return out;
}

// ---- the sender's side ----

json SubmitRequest::ToJson() const {
  json out = {{"sweep", sweep}};
  if (!submission_id.empty()) out["submission_id"] = submission_id;
  return out;
}

json SweepRequest::ToJson() const {
  json out = json::object();
  if (sweep_id) out["sweep_id"] = *sweep_id;
  return out;
}

json ResultsRequest::ToJson() const {
  json out = {{"limit", limit}};
  if (sweep_id) out["sweep_id"] = *sweep_id;
  return out;
}

json QueryRequest::ToJson() const { return {{"sql", sql}}; }

json CalibrateRequest::ToJson() const { return {{"agents", agents}}; }

json PruneRequest::ToJson() const { return {{"samples_older_than_s", samples_older_than_s}}; }

json BaselineResetRequest::ToJson() const {
  json out = json::object();
  if (!host.empty()) out["host"] = host;
  if (!model.empty()) out["model"] = model;
  if (!note.empty()) out["note"] = note;
  return out;
}

json SetPriceRequest::ToJson() const {
  return {{"host", host}, {"per_hour", price.per_hour}, {"currency", price.currency}};
}

std::string_view ScheduleActionName(ScheduleRequest::Action action) {
  for (const auto& [text, value] : kScheduleActions) {
    if (value == action) return text;
  }
  return "";
}

json ScheduleRequest::ToJson() const {
  json out = json::object();
  out["action"] = std::string(ScheduleActionName(action));
  if (!name.empty()) out["name"] = name;
  if (!cron.empty()) out["cron"] = cron;
  if (!tz.empty()) out["tz"] = tz;
  if (!sweep.is_null()) out["sweep"] = sweep;
  out["overlap"] = overlap_queue ? "queue" : "skip";
  if (start_deadline_s) out["start_deadline_s"] = *start_deadline_s;
  out["limit"] = limit;
  if (!submission_id.empty()) out["submission_id"] = submission_id;
  return out;
}

}  // namespace benchfleet
