#include "common/job_spec_read.h"

#include <algorithm>

namespace benchfleet {

using nlohmann::json;

Status FieldError(const std::string& field, const std::string& message) {
  return InvalidArgument(field + ": " + message);
}

JobSpecError ToJobSpecError(const Status& status) {
  const std::string& text = status.message();
  const std::size_t colon = text.find(": ");
  if (colon == std::string::npos) return {"", text};
  return {text.substr(0, colon), text.substr(colon + 2)};
}

std::string Quoted(const std::string& s) { return json(s).dump(); }

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

StatusOr<std::int64_t> ReadInt(const json& value, const std::string& name, std::int64_t min,
                               std::int64_t max) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v <= static_cast<std::uint64_t>(max) && static_cast<std::int64_t>(v) >= min) {
      return static_cast<std::int64_t>(v);
    }
  } else if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (v >= min && v <= max) return v;
  }
  const std::string range =
      max == kNoLimit ? "an integer >= " + std::to_string(min)
                      : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return FieldError(name, name + " must be " + range + ", got " + value.dump());
}

StatusOr<std::int64_t> ReadRequiredInt(const json& holder, const char* key, std::int64_t min,
                                       std::int64_t max) {
  if (!holder.contains(key)) return FieldError(key, std::string("missing ") + key);
  return ReadInt(holder.at(key), key, min, max);
}

StatusOr<std::string> ReadChoice(const json& holder, const char* key,
                                 const std::vector<std::string>& accepted) {
  // The known values are written out only for an error: every job read on the result
  // path comes through here, and almost every one is valid.
  auto known = [&] {
    const std::string list = accepted.empty() ? kKnownDevices : Join(accepted);
    return "; known " + std::string(key) + "s: " + list;
  };
  if (!holder.contains(key)) return FieldError(key, std::string("missing ") + key + known());
  const json& value = holder.at(key);
  if (!value.is_string()) {
    return FieldError(key, std::string(key) + " must be a string, got " + value.dump());
  }
  std::string choice = value.get<std::string>();
  if (!accepted.empty() && std::find(accepted.begin(), accepted.end(), choice) == accepted.end()) {
    return FieldError(key, "unknown " + std::string(key) + " " + Quoted(choice) + known());
  }
  return choice;
}

StatusOr<bool> ReadBool(const json& value, const std::string& name) {
  if (!value.is_boolean()) {
    return FieldError(name, name + " must be true or false, got " + value.dump());
  }
  return value.get<bool>();
}

StatusOr<std::vector<std::int64_t>> ReadDims(const json& value, const std::string& name,
                                             std::size_t min_size, std::int64_t min,
                                             const std::string& example) {
  if (!value.is_array() || value.size() < min_size) {
    return FieldError(name, name + " must be an array of at least " + std::to_string(min_size) +
                                " integers (e.g. " + example + "), got " + value.dump());
  }
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(const std::int64_t dim, ReadInt(value[i], name + "[" + std::to_string(i) + "]",
                                                     min, kMaxModelDimension));
    dims.push_back(dim);
  }
  return dims;
}

}  // namespace benchfleet
