// The job's `timing` object (TimingSpec): how long to warm up and sample, and how
// narrow the median's interval must be to stop.

#include <cmath>
#include <utility>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// timing[key], where present, into *out; absent: *out keeps its default.
Status ReadSeconds(const json& timing, const char* key, double* out) {
  if (!timing.contains(key)) return Status::Ok();
  const json& value = timing.at(key);
  const std::string field = std::string("timing.") + key;
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
    return FieldError(field, field + " must be a positive number, got " + value.dump());
  }
  *out = value.get<double>();
  return Status::Ok();
}

}  // namespace

Status ReadTiming(const json& t, TimingSpec* out) {
  if (!t.is_object()) return FieldError("timing", "timing must be an object, got " + t.dump());
  for (const auto& item : t.items()) {
    const std::string& k = item.key();
    if (k != "warmup_s" && k != "min_time_s" && k != "max_time_s" && k != "target_ci" &&
        k != "target_iqr") {
      return FieldError("timing." + k,
                        "unknown key " + Quoted(k) +
                            " in timing; known keys: warmup_s, min_time_s, max_time_s, target_ci");
    }
  }
  // Read into a copy: a refused timing leaves *out as it was.
  TimingSpec timing = *out;
  // target_iqr, the spread sampling once stopped on, is still read (and range-checked) so
  // that sweep files and schedules written before target_ci keep working; it no longer
  // changes anything.
  double target_iqr = 0.05;
  RETURN_IF_ERROR(ReadSeconds(t, "warmup_s", &timing.warmup_s));
  RETURN_IF_ERROR(ReadSeconds(t, "min_time_s", &timing.min_time_s));
  RETURN_IF_ERROR(ReadSeconds(t, "max_time_s", &timing.max_time_s));
  RETURN_IF_ERROR(ReadSeconds(t, "target_ci", &timing.target_ci));
  RETURN_IF_ERROR(ReadSeconds(t, "target_iqr", &target_iqr));
  if (timing.min_time_s > timing.max_time_s) {
    return FieldError("timing.min_time_s", "timing.min_time_s (" + json(timing.min_time_s).dump() +
                                               ") must not exceed timing.max_time_s (" +
                                               json(timing.max_time_s).dump() + ")");
  }
  for (const auto& [key, value] : {std::pair<const char*, double>("target_ci", timing.target_ci),
                                   std::pair<const char*, double>("target_iqr", target_iqr)}) {
    if (value >= 1) {
      return FieldError(std::string("timing.") + key,
                        std::string("timing.") + key +
                            " must be in (0, 1), a fraction of the median, got " +
                            json(value).dump());
    }
  }
  *out = timing;
  return Status::Ok();
}

}  // namespace benchfleet
