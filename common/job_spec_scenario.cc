// The job's serving scenario (ServerScenario): "offline", "single_stream", or an object
// {"kind": K, ...} with K's keys. The server's max_batch defaults to the job's batch_size.

#include <algorithm>
#include <cmath>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"

namespace benchfleet {
namespace {

using nlohmann::json;

StatusOr<double> ReadPositive(const json& value, const std::string& field, double max) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0 ||
      value.get<double>() > max) {
    return FieldError(field, field + " must be a positive number up to " + json(max).dump() +
                                 ", got " + value.dump());
  }
  return value.get<double>();
}

// One key of a scenario object other than kind.
Status ReadScenarioKey(const std::string& key, const json& value, const std::string& kind,
                       ServerScenario* s) {
  const std::string field = "scenario." + key;
  const bool server = kind == "server";
  if (kind == "offline") {
    return FieldError(field, "unknown key " + Quoted(key) +
                                 " in scenario of kind \"offline\" "
                                 "(timing sets how long it runs); known keys: kind");
  }
  if (key == "min_duration_s") {
    ASSIGN_OR_RETURN(s->min_duration_s, ReadPositive(value, field, kMaxScenarioSeconds));
  } else if (key == "max_duration_s") {
    ASSIGN_OR_RETURN(s->max_duration_s, ReadPositive(value, field, kMaxScenarioSeconds));
  } else if (key == "min_queries") {
    ASSIGN_OR_RETURN(s->min_queries, ReadInt(value, field, 1, std::int64_t{1} << 30));
  } else if (server && key == "qps") {
    ASSIGN_OR_RETURN(s->qps, ReadPositive(value, field, kMaxScenarioQps));
  } else if (server && key == "max_batch") {
    ASSIGN_OR_RETURN(s->max_batch, ReadInt(value, field, 1, kMaxSearchBatch));
  } else if (server && key == "max_wait_ms") {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
        value.get<double>() > 1e6) {
      return FieldError(field, field + " must be a number of ms in [0, 1e6], got " + value.dump());
    }
    s->max_wait_ms = value.get<double>();
  } else if (server && key == "slo_p99_ms") {
    ASSIGN_OR_RETURN(s->slo_p99_ms, ReadPositive(value, field, 1e6));
  } else {
    const std::string known = server ? "kind, qps, max_batch, max_wait_ms, slo_p99_ms, "
                                       "min_duration_s, min_queries, max_duration_s"
                                     : "kind, min_duration_s, min_queries, max_duration_s";
    return FieldError(field, "unknown key " + Quoted(key) + " in scenario of kind " + Quoted(kind) +
                                 "; known keys: " + known);
  }
  return Status::Ok();
}

}  // namespace

Status ReadScenario(const json& value, JobSpec* spec) {
  const std::vector<std::string>& kinds = KnownScenarios();
  const json kind = value.is_object() ? value.value("kind", json(nullptr)) : value;
  if (!kind.is_string() ||
      std::find(kinds.begin(), kinds.end(), kind.get<std::string>()) == kinds.end()) {
    return FieldError(value.is_object() ? "scenario.kind" : "scenario",
                      "scenario must be one of " + Join(kinds) +
                          " or an object {\"kind\": \"server\", \"qps\": Q, ...}, got " +
                          value.dump());
  }
  spec->scenario = kind.get<std::string>();
  const bool server = spec->scenario == "server";
  ServerScenario& s = spec->serving;
  s.max_batch = server ? spec->batch_size : 1;
  if (!value.is_object()) {
    if (server) {
      return FieldError(
          "scenario.qps",
          "scenario \"server\" needs an arrival rate: {\"kind\": \"server\", \"qps\": Q}");
    }
    return Status::Ok();
  }
  for (const auto& item : value.items()) {
    if (item.key() == "kind") continue;
    RETURN_IF_ERROR(ReadScenarioKey(item.key(), item.value(), spec->scenario, &s));
  }
  if (server && s.qps == 0) {
    return FieldError("scenario.qps",
                      "scenario.qps: missing (the arrival rate, queries per second)");
  }
  if (s.min_duration_s > s.max_duration_s) {
    return FieldError("scenario.min_duration_s", "scenario.min_duration_s (" +
                                                     json(s.min_duration_s).dump() +
                                                     ") must not exceed scenario.max_duration_s (" +
                                                     json(s.max_duration_s).dump() + ")");
  }
  return Status::Ok();
}

// single_stream and server time queries of one inference process, one batch at a time.
Status CheckScenario(const JobSpec& spec) {
  if (spec.scenario == "offline") return Status::Ok();
  const std::string why = spec.mode != "inference" ? "mode \"inference\""
                          : spec.parallel || spec.distributed || IsCollectiveModel(spec.model)
                              ? "a job of one process"
                          : spec.max_batch     ? "no search"
                          : spec.replicas != 1 ? "replicas 1"
                          : spec.profile       ? "no profile"
                                               : "";
  if (!why.empty()) {
    return FieldError("scenario", "scenario " + Quoted(spec.scenario) +
                                      " serves queries from one inference model; it "
                                      "needs " +
                                      why);
  }
  if (spec.scenario == "single_stream" && spec.batch_size != 1) {
    return FieldError(
        "batch_size",
        "scenario \"single_stream\" runs one query at a time: batch_size must be 1, got " +
            std::to_string(spec.batch_size));
  }
  return Status::Ok();
}

const std::vector<std::string>& KnownScenarios() {
  static const std::vector<std::string> kinds = {"offline", "single_stream", "server"};
  return kinds;
}

}  // namespace benchfleet
