#include "common/sweep.h"

#include <algorithm>
#include <utility>

#include "common/job_spec.h"
#include "common/limits.h"
#include "common/protocol.h"

namespace benchfleet {
namespace {

const std::vector<std::string> kTopKeys = {"name",      "select", "placement",
                                           "matrix",    "timing", "models",
                                           "timeout_s", "seed",   "description", "regression"};
const std::vector<std::string> kSelectKeys = {"device", "name", "tags", "cpu_model", "gpu_model"};

// Upper bounds that catch typos (batch 1e9) before they reach a worker.
constexpr int64_t kMaxBatchSize = 1 << 20;
constexpr int64_t kMaxThreads = 1024;
constexpr size_t kMaxCombinations = 100000;

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

Status CheckKeys(const json& object, const std::vector<std::string>& allowed,
                 const std::string& where) {
  for (const auto& item : object.items()) {
    if (!Contains(allowed, item.key())) {
      return InvalidArgument((where.empty() ? "" : where + ": ") + "unknown key \"" + item.key() +
                             "\"; allowed keys: " + Join(allowed));
    }
  }
  return Status::Ok();
}

// Axes in expansion order, outermost first; the default is used when the matrix
// omits the axis (null: the axis is required).
const std::vector<std::pair<std::string, json>>& AxisDefaults() {
  static const std::vector<std::pair<std::string, json>> axes = {
      {"device", json::array({"cpu"})},
      {"model", nullptr},
      {"mode", json::array({"inference"})},
      {"dtype", json::array({"fp32"})},
      {"batch_size", nullptr},
      {"threads", json::array({1})},
      {"interop_threads", json::array({1})},
      {"onednn", json::array({true})},
      // A job of several ranks (null: one process), and the collectives' message size.
      {"parallel", json::array({nullptr})},
      {"bytes", json::array({nullptr})}};
  return axes;
}

// A matrix axis: a non-empty array (or a single value, taken as a one-element array).
// Only the sweep's own limits are checked here; what a worker accepts is checked per
// combination by ParseJobConfig.
StatusOr<json> Axis(const json& matrix, const std::string& key, const json& fallback) {
  auto it = matrix.find(key);
  if (it == matrix.end()) {
    if (fallback.is_null()) return InvalidArgument("matrix." + key + ": required");
    return fallback;
  }
  json values = it->is_array() ? *it : json::array({*it});
  if (values.empty()) return InvalidArgument("matrix." + key + ": must not be empty");
  if (key != "batch_size" && key != "threads") return values;
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    int64_t max = key == "batch_size" ? kMaxBatchSize : kMaxThreads;
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > max) {
      return InvalidArgument("matrix." + key + "[" + std::to_string(i) +
                             "]: must be a positive integer up to " + std::to_string(max) +
                             ", got " + v.dump());
    }
  }
  return values;
}

// The sweep field a worker's objection to a job came from: model_args.x is
// models.<model>.x, an axis is matrix.<axis>[i], timing and seed are themselves.
std::string SweepField(const std::string& job_field, const std::string& model,
                       const std::vector<MatrixAxis>& axes, const std::vector<size_t>& index) {
  const std::string args = "model_args";
  if (job_field.compare(0, args.size(), args) == 0) {
    return "models." + model + job_field.substr(args.size());
  }
  const std::string key = job_field.substr(0, job_field.find('.'));
  for (size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].key != key) continue;
    // An axis the matrix left out (null): the fix is to add it.
    if (axes[a].values[index[a]].is_null()) return "matrix." + key;
    return "matrix." + key + "[" + std::to_string(index[a]) + "]" + job_field.substr(key.size());
  }
  return job_field.empty() ? "matrix" : job_field;
}

Status ValidateSelect(const json& select) {
  if (!select.is_object()) return InvalidArgument("select: must be an object");
  RETURN_IF_ERROR(CheckKeys(select, kSelectKeys, "select"));
  for (const char* key : {"device", "cpu_model", "gpu_model"}) {
    if (select.contains(key) && !select[key].is_string()) {
      return InvalidArgument(std::string("select.") + key + ": must be a string");
    }
  }
  if (select.contains("device")) {
    std::string device = select["device"];
    if (device != "cpu" && device != "cuda") {
      return InvalidArgument("select.device: must be \"cpu\" or \"cuda\", got \"" + device + "\"");
    }
  }
  for (const char* key : {"name", "tags"}) {
    if (!select.contains(key)) continue;
    const json& v = select[key];
    bool ok = v.is_string() || (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) {
                                  return e.is_string();
                                }));
    if (!ok)
      return InvalidArgument(std::string("select.") + key +
                             ": must be a string or an array of strings");
  }
  return Status::Ok();
}

// Arguments of models the matrix does not (yet) name are checked too: a typo there
// is as wrong as anywhere else.
Status ValidateModelArgs(const json& models) {
  if (!models.is_object()) return InvalidArgument("models: must be an object keyed by model name");
  for (const auto& [model, args] : models.items()) {
    if (!Contains(KnownModels(), model)) {
      return InvalidArgument("models." + model +
                             ": unknown model; known models: " + Join(KnownModels()));
    }
    if (!args.is_object()) return InvalidArgument("models." + model + ": must be an object");
    const json probe = {{"model", model},  {"model_args", args}, {"mode", "inference"},
                        {"dtype", "fp32"}, {"device", "cpu"},    {"batch_size", 1},
                        {"threads", 1}};
    JobSpecError error;
    if (!ParseJobConfig(probe, &error)) {
      return InvalidArgument(SweepField(error.field, model, {}, {}) + ": " + error.message);
    }
  }
  return Status::Ok();
}

// Calls `fn` with the job spec of combinations [first, first + count) and their index
// on every axis, in order: an odometer over the axes, the last one turning fastest.
Status Expand(const Sweep& sweep, size_t first, size_t count,
              const std::function<Status(const json& spec, const std::vector<size_t>& index)>& fn) {
  const json timing = {{"warmup_s", sweep.timing.warmup_s},
                       {"min_time_s", sweep.timing.min_time_s},
                       {"max_time_s", sweep.timing.max_time_s},
                       {"target_iqr", sweep.timing.target_iqr}};
  const std::vector<MatrixAxis>& axes = sweep.axes;
  // Combination `first` in mixed radix: its index on each axis.
  std::vector<size_t> index(axes.size(), 0);
  for (size_t a = axes.size(), rest = first; a-- > 0;) {
    const size_t size = std::max<size_t>(1, axes[a].values.size());
    index[a] = rest % size;
    rest /= size;
  }
  const size_t end = std::min(sweep.combination_count, first + std::min(count, sweep.combination_count));
  for (size_t c = first; c < end; ++c) {
    json spec = {{"seed", sweep.seed}, {"timing", timing}};
    if (sweep.placement == Placement::kSpread) spec[kSpreadPlacementKey] = kSpreadPlacement;
    json bytes;
    for (size_t a = 0; a < axes.size(); ++a) {
      const json& value = axes[a].values[index[a]];
      if (axes[a].key == "bytes") {
        bytes = value;
      } else if (!(axes[a].key == "parallel" && value.is_null())) {
        spec[axes[a].key] = value;
      }
    }
    const json& model = spec["model"];
    if (model.is_string() && sweep.model_args.contains(model.get<std::string>())) {
      spec["model_args"] = sweep.model_args[model.get<std::string>()];
    }
    // The size axis sets the collectives' model_args.bytes; any other model refuses it
    // (CheckCombinations), since it would only repeat the same job.
    if (!bytes.is_null()) {
      if (!spec.contains("model_args") || !spec["model_args"].is_object()) spec["model_args"] = json::object();
      spec["model_args"]["bytes"] = bytes;
    }
    RETURN_IF_ERROR(fn(spec, index));
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  return Status::Ok();
}

// The device that decides where a job runs, from its `device` and `parallel` values:
// its own device ("cpu" where it is not a string), except that a pipeline inside one
// process puts stage s on cuda:s, so it needs an agent whose worker sees `stages` GPUs,
// as a job on cuda:<stages - 1> does.
std::string PlacementDevice(const json& device, const json& parallel) {
  std::string placed = device.is_string() ? device.get<std::string>() : "cpu";
  if (parallel.is_object() && parallel.value("in_process", json(false)) == json(true)) {
    const json stages = parallel.value("stages", json(nullptr));
    if (stages.is_number_integer() && stages.get<int64_t>() > 1) {
      placed = "cuda:" + std::to_string(stages.get<int64_t>() - 1);
    }
  }
  return placed;
}

}  // namespace

StatusOr<RegressionPolicy> ParseRegressionPolicy(const json& value) {
  RegressionPolicy policy;
  if (!value.is_object()) return InvalidArgument("regression: must be an object, got " + value.dump());
  RETURN_IF_ERROR(CheckKeys(value, {"window", "z", "min_change", "min_for_z", "reruns"}, "regression"));
  auto integer = [&](const char* key, int low, int high, int* into) -> Status {
    if (!value.contains(key)) return Status::Ok();
    const json& v = value[key];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
      return InvalidArgument(std::string("regression.") + key + ": must be an integer from " +
                             std::to_string(low) + " to " + std::to_string(high) + ", got " + v.dump());
    }
    *into = static_cast<int>(v.get<int64_t>());
    return Status::Ok();
  };
  auto number = [&](const char* key, double low, double high, double* into) -> Status {
    if (!value.contains(key)) return Status::Ok();
    const json& v = value[key];
    if (!v.is_number() || !(v.get<double>() > low) || v.get<double>() > high) {
      return InvalidArgument(std::string("regression.") + key + ": must be a number above " +
                             json(low).dump() + " and at most " + json(high).dump() + ", got " + v.dump());
    }
    *into = v.get<double>();
    return Status::Ok();
  };
  RETURN_IF_ERROR(integer("window", 2, 1000, &policy.window));
  RETURN_IF_ERROR(number("z", 0, 1000, &policy.z));
  RETURN_IF_ERROR(number("min_change", 0, 100, &policy.min_change));
  RETURN_IF_ERROR(integer("min_for_z", 2, 1000, &policy.min_for_z));
  RETURN_IF_ERROR(integer("reruns", 1, 20, &policy.reruns));
  return policy;
}

Status Sweep::ForEachCombination(size_t first, size_t count,
                                 const std::function<Status(const Combination&)>& fn) const {
  return Expand(*this, first, count, [&](const json& spec, const std::vector<size_t>&) {
    return fn({spec.dump(), PlacementDevice(spec.value("device", json(nullptr)),
                                            spec.value("parallel", json(nullptr)))});
  });
}

Status Sweep::CheckCombinations(size_t first, size_t count) const {
  return Expand(*this, first, count, [&](const json& spec, const std::vector<size_t>& index) {
    JobSpecError error;
    const auto model = spec.find("model");
    const std::string name = model != spec.end() && model->is_string() ? model->get<std::string>() : "";
    if (ParseJobConfig(spec, &error)) return Status::Ok();
    // model_args.bytes from the size axis is the axis' fault, not models.<model>'s.
    for (size_t a = 0; a < axes.size(); ++a) {
      if (axes[a].key == "bytes" && !axes[a].values[index[a]].is_null() &&
          error.field == "model_args.bytes") {
        return InvalidArgument("matrix.bytes[" + std::to_string(index[a]) + "]: " + error.message);
      }
    }
    return InvalidArgument(SweepField(error.field, name, axes, index) + ": " + error.message);
  });
}

std::vector<std::string> Sweep::Devices() const {
  json device_values = json::array({"cpu"});
  json parallel_values = json::array({nullptr});
  for (const MatrixAxis& axis : axes) {
    if (axis.key == "device") device_values = axis.values;
    if (axis.key == "parallel") parallel_values = axis.values;
  }
  std::vector<std::string> devices;
  for (const json& device : device_values) {
    for (const json& parallel : parallel_values) devices.push_back(PlacementDevice(device, parallel));
  }
  return devices;
}

std::vector<Combination> Sweep::Combinations() const {
  std::vector<Combination> all;
  (void)ForEachCombination([&](const Combination& combination) {
    all.push_back(combination);
    return Status::Ok();
  });
  return all;
}

StatusOr<Sweep> ParseSweep(const json& document) {
  ASSIGN_OR_RETURN(Sweep sweep, ParseSweepShape(document));
  RETURN_IF_ERROR(sweep.CheckCombinations(0, sweep.combination_count));
  return sweep;
}

StatusOr<Sweep> ParseSweepShape(const json& document) {
  if (!document.is_object()) return InvalidArgument("a sweep must be a JSON object");
  RETURN_IF_ERROR(CheckKeys(document, kTopKeys, ""));
  Sweep sweep;

  auto name = document.find("name");
  if (name == document.end() || !name->is_string() || name->get<std::string>().empty() ||
      name->get<std::string>().size() > 200) {
    return InvalidArgument("name: required, a non-empty string of at most 200 characters");
  }
  sweep.name = *name;

  if (document.contains("select")) {
    RETURN_IF_ERROR(ValidateSelect(document["select"]));
    sweep.select = document["select"];
  }
  if (document.contains("placement")) {
    const json& p = document["placement"];
    if (p == "each") {
      sweep.placement = Placement::kEach;
    } else if (p == "any") {
      sweep.placement = Placement::kAny;
    } else if (p == kSpreadPlacement) {
      sweep.placement = Placement::kSpread;
    } else {
      return InvalidArgument("placement: must be \"each\", \"any\" or \"spread\", got " + p.dump());
    }
  }
  if (document.contains("timing")) {
    JobSpecError error;
    if (!ParseTiming(document["timing"], &sweep.timing, &error)) {
      return InvalidArgument(error.message);
    }
  }
  if (document.contains("timeout_s")) {
    const json& t = document["timeout_s"];
    if (!t.is_number() || t.get<double>() <= 0) {
      return InvalidArgument("timeout_s: must be a positive number of seconds, got " + t.dump());
    }
    sweep.timeout_s = t;
  }
  if (document.contains("seed")) {
    if (!document["seed"].is_number_integer()) return InvalidArgument("seed: must be an integer");
    sweep.seed = document["seed"];
  }
  if (document.contains("models")) {
    RETURN_IF_ERROR(ValidateModelArgs(document["models"]));
    sweep.model_args = document["models"];
  }
  if (document.contains("regression")) {
    // Checked here; the coordinator reads it from the stored sweep when it judges.
    RETURN_IF_ERROR(ParseRegressionPolicy(document["regression"]).status());
  }
  if (document.contains("description") && !document["description"].is_string()) {
    return InvalidArgument("description: must be a string");
  }

  auto matrix = document.find("matrix");
  if (matrix == document.end() || !matrix->is_object()) {
    return InvalidArgument("matrix: required, an object of axes (model, batch_size, threads, ...)");
  }
  std::vector<std::string> axis_keys;
  for (const auto& [key, fallback] : AxisDefaults()) axis_keys.push_back(key);
  RETURN_IF_ERROR(CheckKeys(*matrix, axis_keys, "matrix"));
  std::vector<MatrixAxis> axes;
  size_t count = 1;
  for (const auto& [key, fallback] : AxisDefaults()) {
    ASSIGN_OR_RETURN(json values, Axis(*matrix, key, fallback));
    count *= values.size();
    if (count > kMaxCombinations) {
      return InvalidArgument("matrix: more combinations than the limit of " +
                             std::to_string(kMaxCombinations));
    }
    axes.push_back({key, std::move(values)});
  }
  sweep.axes = std::move(axes);
  sweep.combination_count = count;
  sweep.source = document;
  return sweep;
}

StatusOr<Sweep> ParseSweepText(const std::string& text) {
  if (NestingDepth(text) > kMaxJsonDepth) {
    return InvalidArgument("not valid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels");
  }
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    // e.what() carries the byte position, which is what a user needs to fix the file.
    return InvalidArgument(std::string("not valid JSON: ") + e.what());
  }
  return ParseSweep(document);
}

double JobTimeoutSeconds(const Sweep& sweep) {
  if (sweep.timeout_s > 0) return sweep.timeout_s;
  return kJobStartupAllowanceS + 2 * (sweep.timing.warmup_s + sweep.timing.max_time_s);
}

}  // namespace benchfleet
