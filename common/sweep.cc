#include "common/sweep.h"

#include <algorithm>
#include <set>

#include "common/limits.h"
#include "common/protocol.h"

namespace benchfleet {
namespace {

const std::vector<std::string> kModes = {"inference"};
const std::vector<std::string> kDtypes = {"fp32"};
const std::vector<std::string> kTopKeys = {"name",      "select", "placement",
                                           "matrix",    "timing", "models",
                                           "timeout_s", "seed",   "description"};
const std::vector<std::string> kMatrixKeys = {"model", "batch_size", "threads",
                                              "dtype", "mode",       "device"};
const std::vector<std::string> kTimingKeys = {"warmup_s", "min_time_s", "max_time_s", "target_iqr"};
const std::vector<std::string> kSelectKeys = {"device", "name", "tags", "cpu_model", "gpu_model"};
const std::vector<std::string> kMlpArgKeys = {"layers"};

// Upper bounds that catch typos (batch 1e9) before they reach a worker.
constexpr int64_t kMaxBatchSize = 1 << 20;
constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxLayerWidth = 1 << 20;
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

StatusOr<double> PositiveNumber(const json& object, const char* key, double fallback,
                                const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_number() || it->get<double>() <= 0) {
    return InvalidArgument(where + "." + key + ": must be a positive number, got " + it->dump());
  }
  return it->get<double>();
}

bool IsDevice(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return false;
  return std::all_of(device.begin() + 5, device.end(), ::isdigit);
}

// A matrix axis: a non-empty array (or a single value, taken as a one-element array).
StatusOr<json> Axis(const json& matrix, const std::string& key, const json& fallback) {
  auto it = matrix.find(key);
  if (it == matrix.end()) {
    if (fallback.is_null()) return InvalidArgument("matrix." + key + ": required");
    return fallback;
  }
  json values = it->is_array() ? *it : json::array({*it});
  if (values.empty()) return InvalidArgument("matrix." + key + ": must not be empty");
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    std::string where = "matrix." + key + "[" + std::to_string(i) + "]";
    if (key == "batch_size" || key == "threads") {
      int64_t max = key == "batch_size" ? kMaxBatchSize : kMaxThreads;
      if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > max) {
        return InvalidArgument(where + ": must be a positive integer up to " + std::to_string(max) +
                               ", got " + v.dump());
      }
      continue;
    }
    if (!v.is_string()) return InvalidArgument(where + ": must be a string, got " + v.dump());
    const std::string s = v.get<std::string>();
    if (key == "model" && !Contains(KnownModels(), s)) {
      return InvalidArgument(where + ": unknown model \"" + s +
                             "\"; known models: " + Join(KnownModels()));
    }
    if (key == "mode" && !Contains(kModes, s)) {
      return InvalidArgument(where + ": unknown mode \"" + s + "\"; known modes: " + Join(kModes));
    }
    if (key == "dtype" && !Contains(kDtypes, s)) {
      return InvalidArgument(where + ": unknown dtype \"" + s +
                             "\"; known dtypes: " + Join(kDtypes));
    }
    if (key == "device" && !IsDevice(s)) {
      return InvalidArgument(where + ": unknown device \"" + s + "\"; use cpu, cuda or cuda:N");
    }
  }
  return values;
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

Status ValidateModelArgs(const json& models) {
  if (!models.is_object()) return InvalidArgument("models: must be an object keyed by model name");
  for (const auto& [model, args] : models.items()) {
    if (!Contains(KnownModels(), model)) {
      return InvalidArgument("models." + model +
                             ": unknown model; known models: " + Join(KnownModels()));
    }
    if (!args.is_object()) return InvalidArgument("models." + model + ": must be an object");
    if (model == "mlp") {
      RETURN_IF_ERROR(CheckKeys(args, kMlpArgKeys, "models.mlp"));
      if (args.contains("layers")) {
        const json& layers = args["layers"];
        if (!layers.is_array() || layers.size() < 2) {
          return InvalidArgument("models.mlp.layers: must be an array of at least 2 widths");
        }
        for (size_t i = 0; i < layers.size(); ++i) {
          if (!layers[i].is_number_integer() || layers[i].get<int64_t>() <= 0 ||
              layers[i].get<int64_t>() > kMaxLayerWidth) {
            return InvalidArgument("models.mlp.layers[" + std::to_string(i) +
                                   "]: must be a positive integer, got " + layers[i].dump());
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& KnownModels() {
  static const std::vector<std::string> models = {"mlp"};
  return models;
}

StatusOr<Sweep> ParseSweep(const json& document) {
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
    } else {
      return InvalidArgument("placement: must be \"each\" or \"any\", got " + p.dump());
    }
  }
  if (document.contains("timing")) {
    const json& t = document["timing"];
    if (!t.is_object()) return InvalidArgument("timing: must be an object");
    RETURN_IF_ERROR(CheckKeys(t, kTimingKeys, "timing"));
    ASSIGN_OR_RETURN(sweep.timing.warmup_s,
                     PositiveNumber(t, "warmup_s", sweep.timing.warmup_s, "timing"));
    ASSIGN_OR_RETURN(sweep.timing.min_time_s,
                     PositiveNumber(t, "min_time_s", sweep.timing.min_time_s, "timing"));
    ASSIGN_OR_RETURN(sweep.timing.max_time_s,
                     PositiveNumber(t, "max_time_s", sweep.timing.max_time_s, "timing"));
    ASSIGN_OR_RETURN(sweep.timing.target_iqr,
                     PositiveNumber(t, "target_iqr", sweep.timing.target_iqr, "timing"));
    if (sweep.timing.min_time_s > sweep.timing.max_time_s) {
      return InvalidArgument("timing.min_time_s: must not exceed timing.max_time_s");
    }
    if (sweep.timing.target_iqr >= 1) {
      return InvalidArgument("timing.target_iqr: must be below 1 (a fraction of the median)");
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
  if (document.contains("description") && !document["description"].is_string()) {
    return InvalidArgument("description: must be a string");
  }

  auto matrix = document.find("matrix");
  if (matrix == document.end() || !matrix->is_object()) {
    return InvalidArgument("matrix: required, an object of axes (model, batch_size, threads, ...)");
  }
  RETURN_IF_ERROR(CheckKeys(*matrix, kMatrixKeys, "matrix"));
  ASSIGN_OR_RETURN(json models, Axis(*matrix, "model", nullptr));
  ASSIGN_OR_RETURN(json batches, Axis(*matrix, "batch_size", nullptr));
  ASSIGN_OR_RETURN(json threads, Axis(*matrix, "threads", json::array({1})));
  ASSIGN_OR_RETURN(json dtypes, Axis(*matrix, "dtype", json::array({"fp32"})));
  ASSIGN_OR_RETURN(json modes, Axis(*matrix, "mode", json::array({"inference"})));
  ASSIGN_OR_RETURN(json devices, Axis(*matrix, "device", json::array({"cpu"})));

  size_t count = models.size() * batches.size() * threads.size() * dtypes.size() * modes.size() *
                 devices.size();
  if (count > kMaxCombinations) {
    return InvalidArgument("matrix: " + std::to_string(count) +
                           " combinations exceed the limit of " + std::to_string(kMaxCombinations));
  }
  json timing = {{"warmup_s", sweep.timing.warmup_s},
                 {"min_time_s", sweep.timing.min_time_s},
                 {"max_time_s", sweep.timing.max_time_s},
                 {"target_iqr", sweep.timing.target_iqr}};
  for (const auto& device : devices)
    for (const auto& model : models)
      for (const auto& mode : modes)
        for (const auto& dtype : dtypes)
          for (const auto& batch : batches)
            for (const auto& thread_count : threads) {
              json spec = {
                  {"model", model},
                  {"mode", mode},
                  {"dtype", dtype},
                  {"device", device},
                  {"batch_size", batch},
                  {"threads", thread_count},
                  {"seed", sweep.seed},
                  {"timing", timing},
                  {"model_args", sweep.model_args.value(model.get<std::string>(), json::object())}};
              sweep.combinations.push_back(std::move(spec));
            }

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
  } catch (const json::parse_error& e) {
    // e.what() carries the byte position, which is what a user needs to fix the file.
    return InvalidArgument(std::string("not valid JSON: ") + e.what());
  }
  return ParseSweep(document);
}

double JobTimeoutSeconds(const Sweep& sweep) {
  if (sweep.timeout_s > 0) return sweep.timeout_s;
  return kJobStartupAllowanceS + 2 * (sweep.timing.warmup_s + sweep.timing.max_time_s);
}

namespace {

std::vector<std::string> AsList(const json& value) {
  if (value.is_string()) return {value.get<std::string>()};
  std::vector<std::string> out;
  for (const auto& v : value) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

bool AgentMatches(const json& select, const AgentDescription& agent) {
  if (!select.is_object()) return false;
  const json& caps = agent.capabilities;
  const json gpus = caps.value("gpus", json::array());
  if (select.contains("device") && select["device"] == "cuda" &&
      (!gpus.is_array() || gpus.empty())) {
    return false;
  }
  if (select.contains("name")) {
    auto names = AsList(select["name"]);
    if (!Contains(names, agent.name)) return false;
  }
  if (select.contains("tags")) {
    for (const auto& tag : AsList(select["tags"])) {
      if (!Contains(agent.tags, tag)) return false;
    }
  }
  if (select.contains("cpu_model")) {
    std::string cpu = caps.value("host", json::object()).value("cpu_model", "");
    if (cpu.find(select["cpu_model"].get<std::string>()) == std::string::npos) return false;
  }
  if (select.contains("gpu_model")) {
    const std::string wanted = select["gpu_model"];
    bool found = false;
    if (gpus.is_array()) {
      for (const auto& gpu : gpus) {
        if (gpu.is_object() && gpu.value("name", "").find(wanted) != std::string::npos)
          found = true;
      }
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace benchfleet
