#include "common/client_replies.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// A count a reply carries: an integer >= 0 (Decode checked it is an integer).
StatusOr<int64_t> Count(const json& body, const char* type, const char* field) {
  const auto it = body.find(field);
  if (it == body.end()) return int64_t{0};
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return InvalidArgument(std::string(type) + "." + field + ": must be an integer >= 0, got " + ShownValue(*it));
  }
  return it->get<int64_t>();
}

}  // namespace

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
  ASSIGN_OR_RETURN(out.sweep_id, Count(body, "submitted", "sweep_id"));
  ASSIGN_OR_RETURN(out.jobs, Count(body, "submitted", "jobs"));
  for (const json& agent : body.at("agents")) {
    if (!agent.is_string()) return InvalidArgument("submitted.agents: must hold names, got " + ShownValue(agent));
    out.agents.push_back(agent.get<std::string>());
  }
  out.existing = body.value("existing", false);
  ASSIGN_OR_RETURN(out.excluded, Count(body, "submitted", "excluded"));
  if (const auto skipped = body.find("skipped"); skipped != body.end()) {
    ASSIGN_OR_RETURN(out.skipped, Count(*skipped, "submitted.skipped", "count"));
    if (const auto first = skipped->find("first"); first != skipped->end()) {
      if (!first->is_array()) return InvalidArgument("submitted.skipped.first: must be an array, got " + ShownValue(*first));
      for (const json& one : *first) {
        if (!one.is_object()) {
          return InvalidArgument("submitted.skipped.first: must hold {job, reason} objects, got " + ShownValue(one));
        }
      }
      out.skipped_first = *first;
    }
  }
  return out;
}

json CancelledReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id}, {"sweep_id", sweep_id}, {"jobs_cancelled", jobs_cancelled}})
      .body;
}

StatusOr<CancelledReply> CancelledReply::FromJson(const json& body) {
  CancelledReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.sweep_id, Count(body, "cancelled", "sweep_id"));
  ASSIGN_OR_RETURN(out.jobs_cancelled, Count(body, "cancelled", "jobs_cancelled"));
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
  ASSIGN_OR_RETURN(out.results_pruned, Count(body, "pruned", "results_pruned"));
  ASSIGN_OR_RETURN(out.bytes_before, Count(body, "pruned", "bytes_before"));
  ASSIGN_OR_RETURN(out.bytes_after, Count(body, "pruned", "bytes_after"));
  return out;
}

}  // namespace benchfleet
