// The small readers the job spec's sections share (common/job_spec_sections.h): one
// JSON value each, its error naming the job field at fault. Internal to job_spec*.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/status.h"

namespace benchfleet {

inline constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
inline constexpr const char* kKnownDevices = "cpu, cuda, cuda:N";

// A refusal of the job field `field` ("model_args.layers[1]"; empty for the job as a
// whole): InvalidArgument("<field>: <message>"). Every section names its field first, so
// that ToJobSpecError can hand the two back apart.
Status FieldError(const std::string& field, const std::string& message);

// The public functions' JobSpecError of a section's refusal: the field is the message's
// text before the first ": ", the message the rest (FieldError wrote them that way).
JobSpecError ToJobSpecError(const Status& status);

// A JSON string, quotes and escapes included: "cuda:0" -> "\"cuda:0\"".
std::string Quoted(const std::string& s);
// "a, b, c".
std::string Join(const std::vector<std::string>& list);

// An integer in [min, max] (kNoLimit: no upper bound), called `name` in errors.
StatusOr<std::int64_t> ReadInt(const nlohmann::json& value, const std::string& name,
                               std::int64_t min, std::int64_t max);
// holder[key], which must be there, as ReadInt.
StatusOr<std::int64_t> ReadRequiredInt(const nlohmann::json& holder, const char* key,
                                       std::int64_t min, std::int64_t max);
// holder[key], a string that must be there and one of `accepted`; an empty list accepts
// any string (the device, whose known values are kKnownDevices).
StatusOr<std::string> ReadChoice(const nlohmann::json& holder, const char* key,
                                 const std::vector<std::string>& accepted);
// true or false, called `name` in errors.
StatusOr<bool> ReadBool(const nlohmann::json& value, const std::string& name);
// An array of at least `min_size` integers in [min, kMaxModelDimension] called `name`
// (model_args.layers); `example` shows one in errors.
StatusOr<std::vector<std::int64_t>> ReadDims(const nlohmann::json& value, const std::string& name,
                                             std::size_t min_size, std::int64_t min,
                                             const std::string& example);

}  // namespace benchfleet
