#include "common/op_profile.h"

#include <cmath>
#include <set>

namespace benchfleet {
namespace {

using nlohmann::json;

// A finite number >= 0 of microseconds.
Status ReadMicros(const json& row, const char* key, const std::string& where, double* out) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
      it->get<double>() < 0) {
    return InvalidArgument(where + "." + key + ": must be a finite number of microseconds >= 0");
  }
  *out = it->get<double>();
  return Status::Ok();
}

Status ReadShapes(const json& row, const std::string& where, std::string* out) {
  auto it = row.find("input_shapes");
  const std::string name = where + ".input_shapes";
  if (it == row.end() || !it->is_array() || it->size() > kMaxOpInputs) {
    return InvalidArgument(name + ": must be an array of at most " + std::to_string(kMaxOpInputs) +
                           " shapes");
  }
  json shapes = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& shape = (*it)[i];
    const std::string at = name + "[" + std::to_string(i) + "]";
    if (!shape.is_array() || shape.size() > kMaxShapeDims) {
      return InvalidArgument(at + ": must be an array of at most " + std::to_string(kMaxShapeDims) +
                             " dimensions");
    }
    json dims = json::array();
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        return InvalidArgument(at + ": dimensions must be integers >= 0");
      }
      dims.push_back(d.get<int64_t>());
    }
    shapes.push_back(std::move(dims));
  }
  *out = shapes.dump();  // rebuilt from checked integers: no text of the peer's own
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<OpProfileRow>> ParseOpProfile(const json& value, const std::string& where) {
  if (!value.is_array() || value.size() > kOpProfileRows) {
    return InvalidArgument(where + ": must be an array of at most " +
                           std::to_string(kOpProfileRows) + " operators");
  }
  std::vector<OpProfileRow> rows;
  std::set<std::string> seen;
  for (size_t i = 0; i < value.size(); ++i) {
    const json& row = value[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!row.is_object()) return InvalidArgument(at + ": must be an object");
    OpProfileRow out;
    auto op = row.find("op");
    if (op == row.end() || !op->is_string() || op->get<std::string>().empty() ||
        op->get<std::string>().size() > kMaxOpNameBytes) {
      return InvalidArgument(at + ".op: must be a non-empty string of at most " +
                             std::to_string(kMaxOpNameBytes) + " bytes");
    }
    out.op = op->get<std::string>();
    if (!seen.insert(out.op).second)
      return InvalidArgument(at + ".op: \"" + out.op + "\" is listed twice");
    auto calls = row.find("calls");
    if (calls == row.end() || !calls->is_number_integer() || calls->get<int64_t>() < 1) {
      return InvalidArgument(at + ".calls: must be an integer >= 1");
    }
    out.calls = calls->get<int64_t>();
    RETURN_IF_ERROR(ReadMicros(row, "self_us", at, &out.self_us));
    RETURN_IF_ERROR(ReadMicros(row, "total_us", at, &out.total_us));
    if (out.self_us > out.total_us) {
      return InvalidArgument(at + ".self_us: must not exceed total_us");
    }
    RETURN_IF_ERROR(ReadShapes(row, at, &out.input_shapes));
    rows.push_back(std::move(out));
  }
  return rows;
}

}  // namespace benchfleet
