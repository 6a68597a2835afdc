#include "common/client_replies.h"

#include "common/json_read.h"
#include "common/limits.h"

namespace benchfleet {

using nlohmann::json;

json SubmittedReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id},
                             {"sweep_id", sweep_id},
                             {"jobs", jobs},
                             {"agents", agents},
                             {"existing", existing},
                             {"excluded", excluded},
                             {"skipped", {{"count", skipped}, {"first", skipped_first}}}})
      .body;
}

StatusOr<SubmittedReply> SubmittedReply::FromJson(const json& body) {
  SubmittedReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.sweep_id, ReadIntegerOr(body, "submitted", "sweep_id", kAtLeastZero, 0));
  ASSIGN_OR_RETURN(out.jobs, ReadIntegerOr(body, "submitted", "jobs", kAtLeastZero, 0));
  for (const json& agent : body.at("agents")) {
    if (!agent.is_string())
      return InvalidArgument("submitted.agents: must hold names, got " + ShownValue(agent));
    out.agents.push_back(agent.get<std::string>());
  }
  out.existing = body.value("existing", false);
  ASSIGN_OR_RETURN(out.excluded, ReadIntegerOr(body, "submitted", "excluded", kAtLeastZero, 0));
  if (const auto skipped = body.find("skipped"); skipped != body.end()) {
    ASSIGN_OR_RETURN(out.skipped,
                     ReadIntegerOr(*skipped, "submitted.skipped", "count", kAtLeastZero, 0));
    if (const auto first = skipped->find("first"); first != skipped->end()) {
      if (!first->is_array())
        return InvalidArgument("submitted.skipped.first: must be an array, got " +
                               ShownValue(*first));
      for (const json& one : *first) {
        if (!one.is_object()) {
          return InvalidArgument("submitted.skipped.first: must hold {job, reason} objects, got " +
                                 ShownValue(one));
        }
      }
      out.skipped_first = *first;
    }
  }
  return out;
}

json CancelledReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id},
                             {"sweep_id", sweep_id},
                             {"jobs_cancelled", jobs_cancelled}})
      .body;
}

StatusOr<CancelledReply> CancelledReply::FromJson(const json& body) {
  CancelledReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.sweep_id, ReadIntegerOr(body, "cancelled", "sweep_id", kAtLeastZero, 0));
  ASSIGN_OR_RETURN(out.jobs_cancelled,
                   ReadIntegerOr(body, "cancelled", "jobs_cancelled", kAtLeastZero, 0));
  return out;
}

json PrunedReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id},
                             {"results_pruned", results_pruned},
                             {"bytes_before", bytes_before},
                             {"bytes_after", bytes_after}})
      .body;
}

StatusOr<PrunedReply> PrunedReply::FromJson(const json& body) {
  PrunedReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.results_pruned,
                   ReadIntegerOr(body, "pruned", "results_pruned", kAtLeastZero, 0));
  ASSIGN_OR_RETURN(out.bytes_before,
                   ReadIntegerOr(body, "pruned", "bytes_before", kAtLeastZero, 0));
  ASSIGN_OR_RETURN(out.bytes_after, ReadIntegerOr(body, "pruned", "bytes_after", kAtLeastZero, 0));
  return out;
}

json RowsReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id},
                             {"columns", columns},
                             {"rows", rows},
                             {"truncated", truncated}})
      .body;
}

StatusOr<RowsReply> RowsReply::FromJson(const json& body) {
  RowsReply out;
  out.request_id = body.value("request_id", json());
  for (const json& column : body.at("columns")) {
    if (!column.is_string())
      return InvalidArgument("rows.columns: must hold names, got " + ShownValue(column));
    out.columns.push_back(column.get<std::string>());
  }
  const json& rows = body.at("rows");
  out.rows.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const json& row = rows[r];
    if (!row.is_array() || row.size() != out.columns.size()) {
      return InvalidArgument("rows.rows[" + std::to_string(r) + "]: must be an array of " +
                             std::to_string(out.columns.size()) + " values, one per column, got " +
                             ShownValue(row));
    }
    for (const json& value : row) {
      if (value.is_structured()) {
        return InvalidArgument("rows.rows[" + std::to_string(r) +
                               "]: values are integers, reals, strings or null, got " +
                               ShownValue(value));
      }
    }
    out.rows.push_back(row);
  }
  out.truncated = body.at("truncated").get<bool>();
  return out;
}

std::vector<json> RowsReply::Objects() const {
  std::vector<json> out;
  out.reserve(rows.size());
  for (const json& row : rows) {
    json object = json::object();
    for (size_t c = 0; c < columns.size(); ++c) object[columns[c]] = row[c];
    out.push_back(std::move(object));
  }
  return out;
}

json ScheduleEntry::ToJson() const {
  return {{"name", name},
          {"cron", cron},
          {"tz", tz},
          {"overlap", overlap},
          {"start_deadline_s", start_deadline_s ? json(*start_deadline_s) : json(nullptr)},
          {"created_at", created_at},
          {"handled_until", handled_until},
          {"next_slot", next_slot ? json(*next_slot) : json(nullptr)},
          {"sweep_name", sweep_name ? json(*sweep_name) : json(nullptr)}};
}

json SchedulesReply::ToJson() const {
  json list = json::array();
  for (const ScheduleEntry& entry : schedules) list.push_back(entry.ToJson());
  return MakeMessage(kType, {{"request_id", request_id}, {"schedules", std::move(list)}}).body;
}

StatusOr<SchedulesReply> SchedulesReply::FromJson(const json& body) {
  SchedulesReply out;
  out.request_id = body.value("request_id", json());
  const json& list = body.at("schedules");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    const std::string at = "schedules.schedules[" + std::to_string(i) + "]";
    if (!entry.is_object())
      return InvalidArgument(at + ": must be an object, got " + ShownValue(entry));
    ScheduleEntry one;
    ASSIGN_OR_RETURN(one.name, ReadText(entry, at, "name", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.cron, ReadText(entry, at, "cron", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.tz, ReadText(entry, at, "tz", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.overlap, ReadText(entry, at, "overlap", kMaxMessageBytes));
    if (one.overlap != "skip" && one.overlap != "queue") {
      return InvalidArgument(at + ".overlap: must be \"skip\" or \"queue\", got " +
                             ShownValue(entry.at("overlap")));
    }
    if (const auto deadline = entry.find("start_deadline_s");
        deadline != entry.end() && !deadline->is_null()) {
      if (!deadline->is_number() || !(deadline->get<double>() > 0)) {
        return InvalidArgument(at +
                               ".start_deadline_s: must be a number of seconds > 0 or null, got " +
                               ShownValue(*deadline));
      }
      one.start_deadline_s = deadline->get<double>();
    }
    ASSIGN_OR_RETURN(one.created_at, ReadText(entry, at, "created_at", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.handled_until, ReadText(entry, at, "handled_until", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.next_slot, ReadOptionalText(entry, at, "next_slot", kMaxMessageBytes));
    ASSIGN_OR_RETURN(one.sweep_name, ReadOptionalText(entry, at, "sweep_name", kMaxMessageBytes));
    out.schedules.push_back(std::move(one));
  }
  return out;
}

}  // namespace benchfleet
