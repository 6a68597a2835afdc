#include "common/sweep_versus.h"

#include <algorithm>
#include <set>

#include "common/job_spec.h"
#include "common/sweep.h"

namespace benchfleet {
namespace {

using nlohmann::json;

const std::vector<std::string> kVersusOptions = {"pairing", "max_pairs", "min_change"};
const std::vector<std::string> kPairings = {"auto", "interleaved", "duet", "in_process"};

// Matrix axes a pair cannot be made of: each of their values runs as several worker
// processes (a gang's ranks, replicas), or is no offline timing of one model.
const std::set<std::string> kNotPairable = {"parallel", "bytes", "replicas", "scenario", "profile"};

// Axes whose value changes only what a worker process times, not its threads, pools,
// device or LibTorch: both sides of such a pair can share one process.
const std::set<std::string> kOneProcessAxes = {"dtype",         "batch_size", "mode",
                                               "technique",     "prune",      "reference",
                                               "checkpointing", "slowdown",   "model"};

// Axes whose null value leaves the key out of the job (their default), as the matrix does.
const std::set<std::string> kAbsentWhenNull = {"prune",           "reference", "checkpointing",
                                               "omp_wait_policy", "technique", "torch",
                                               "thread_placement"};

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "models.mlp.layers" -> ("mlp", "layers"); empty for any other axis.
std::pair<std::string, std::string> ModelArgAxis(const std::string& axis) {
  const std::string prefix = "models.";
  if (axis.rfind(prefix, 0) != 0) return {};
  const size_t dot = axis.find('.', prefix.size());
  if (dot == std::string::npos || dot + 1 >= axis.size()) return {};
  return {axis.substr(prefix.size(), dot - prefix.size()), axis.substr(dot + 1)};
}

// The models the sweep's matrix runs.
std::vector<std::string> MatrixModels(const json& document) {
  std::vector<std::string> models;
  const json matrix = document.value("matrix", json::object());
  const json values = matrix.is_object() ? matrix.value("model", json()) : json();
  for (const json& v : values.is_array() ? values : json::array({values})) {
    if (v.is_string()) models.push_back(v.get<std::string>());
  }
  return models;
}

// Refuses a versus whose jobs run in more than one worker process each.
Status CheckOneProcessJobs(const json& document) {
  const json matrix = document.value("matrix", json::object());
  auto non_null = [&](const char* axis) {
    const json values = matrix.is_object() ? matrix.value(axis, json()) : json();
    for (const json& v : values.is_array() ? values : json::array({values})) {
      if (!v.is_null() && !(std::string(axis) == "replicas" && v == 1)) return true;
    }
    return false;
  };
  if (non_null("parallel")) {
    return InvalidArgument(
        "versus: a gang (matrix.parallel) runs its ranks together; versus "
        "pairs jobs of one worker process");
  }
  for (const std::string& model : MatrixModels(document)) {
    if (IsCollectiveModel(model)) {
      return InvalidArgument("versus: the collective " + model +
                             " runs as a gang; versus pairs jobs of one worker process");
    }
  }
  if (non_null("replicas")) {
    return InvalidArgument(
        "versus: replicas (matrix.replicas) run several copies at once; "
        "versus pairs jobs of one worker process");
  }
  if (document.contains("search")) {
    return InvalidArgument(
        "versus: a batch search (search) runs its probes in one job; versus "
        "pairs timed jobs of a given batch");
  }
  if (document.contains("processes")) {
    return InvalidArgument(
        "processes: a sweep with versus runs pairs, each side in a fresh "
        "process (or both in one), until `precision` or versus.max_pairs; "
        "leave processes out");
  }
  return Status::Ok();
}

// The axis: one a sweep can have, which the matrix does not list itself.
Status CheckAxis(const std::string& axis, const json& document) {
  const std::string field = "versus." + axis;
  if (axis == "slowdown") {
    if (document.contains("slowdown")) {
      return InvalidArgument(field +
                             ": the sweep's slowdown is named by versus too; give its "
                             "two values in versus only");
    }
    return Status::Ok();
  }
  const auto [model, arg] = ModelArgAxis(axis);
  if (!model.empty()) {
    const std::vector<std::string> models = MatrixModels(document);
    if (models.size() != 1 || models[0] != model) {
      return InvalidArgument(field + ": the sweep's matrix runs " +
                             (models.empty() ? std::string("no model") : Join(models)) +
                             "; versus on an argument of " + model +
                             " needs a matrix of that one model");
    }
    if (!ModelArgDepth(model, arg)) {
      return InvalidArgument(field + ": " + model + " has no argument \"" + arg + "\"");
    }
    const json models_section = document.value("models", json::object());
    if (models_section.is_object() && models_section.contains(model) &&
        models_section[model].is_object() && models_section[model].contains(arg)) {
      return InvalidArgument(field + ": models." + model + "." + arg +
                             " is named by versus too; give its two values in versus only");
    }
    return Status::Ok();
  }
  const std::vector<std::string>& axes = MatrixAxisNames();
  if (std::find(axes.begin(), axes.end(), axis) == axes.end()) {
    return InvalidArgument("versus: \"" + axis +
                           "\" is no axis of a sweep; versus takes one of the matrix's axes (" +
                           Join(axes) + "), slowdown, or a model's argument as models.MODEL.ARG");
  }
  if (kNotPairable.count(axis)) {
    return InvalidArgument(field + ": versus pairs offline timings of one worker process each; " +
                           axis + " is not an axis to pair on");
  }
  const json matrix = document.value("matrix", json::object());
  if (matrix.is_object() && matrix.contains(axis)) {
    return InvalidArgument("matrix." + axis +
                           ": named by versus too, whose two values say what "
                           "each side runs; leave it out of the matrix");
  }
  return Status::Ok();
}

}  // namespace

json VersusSpec::ToJson() const {
  return {{"axis", axis},          {"a_value", a},           {"b_value", b},
          {"pairing", pairing},    {"max_pairs", max_pairs}, {"min_change", min_change},
          {"precision", precision}};
}

StatusOr<VersusSpec> ParseVersus(const json& document) {
  const json& value = document.at("versus");
  if (!value.is_object()) {
    return InvalidArgument(
        "versus: must be an object naming one axis and its two values, e.g. "
        "{\"torch\": [\"2.14\", \"2.15\"]}, got " +
        value.dump());
  }
  VersusSpec versus;
  std::vector<std::string> axes;
  for (const auto& item : value.items()) {
    if (std::find(kVersusOptions.begin(), kVersusOptions.end(), item.key()) == kVersusOptions.end())
      axes.push_back(item.key());
  }
  if (axes.size() != 1) {
    return InvalidArgument("versus: must name exactly one axis besides its options (" +
                           Join(kVersusOptions) + "), got " +
                           (axes.empty() ? std::string("none") : Join(axes)));
  }
  versus.axis = axes[0];
  const json& values = value.at(versus.axis);
  if (!values.is_array() || values.size() != 2) {
    return InvalidArgument("versus." + versus.axis +
                           ": must be an array of exactly two values, side A's then side B's, "
                           "got " +
                           values.dump());
  }
  versus.a = values[0];
  versus.b = values[1];
  RETURN_IF_ERROR(CheckAxis(versus.axis, document));
  RETURN_IF_ERROR(CheckOneProcessJobs(document));
  if (versus.axis == "slowdown") {
    for (size_t i = 0; i < 2; ++i) {
      const json& v = values[i];
      if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() <= kMaxSlowdown)) {
        return InvalidArgument("versus.slowdown[" + std::to_string(i) +
                               "]: must be a number in [0, 1], got " + v.dump());
      }
    }
  }
  if (value.contains("pairing")) {
    const json& pairing = value.at("pairing");
    if (!pairing.is_string() || std::find(kPairings.begin(), kPairings.end(),
                                          pairing.get<std::string>()) == kPairings.end()) {
      return InvalidArgument("versus.pairing: must be one of " + Join(kPairings) + ", got " +
                             pairing.dump());
    }
    versus.pairing = pairing.get<std::string>();
    if (versus.pairing == "in_process" && !PairsInOneProcess(versus.axis)) {
      return InvalidArgument(
          "versus.pairing: in_process shares one worker process between the "
          "sides, whose " +
          versus.axis + " differs; pair them interleaved or duet");
    }
  }
  if (value.contains("max_pairs")) {
    const json& max = value.at("max_pairs");
    if (!max.is_number_integer() || max.get<int64_t>() < kVersusMinPairs ||
        max.get<int64_t>() > kVersusMaxPairs) {
      return InvalidArgument("versus.max_pairs: must be an integer from " +
                             std::to_string(kVersusMinPairs) + " to " +
                             std::to_string(kVersusMaxPairs) + ", got " + max.dump());
    }
    versus.max_pairs = max.get<int64_t>();
  }
  if (value.contains("min_change")) {
    const json& change = value.at("min_change");
    if (!change.is_number() || !(change.get<double>() >= 0) ||
        !(change.get<double>() < kVersusMaxMinChange)) {
      return InvalidArgument(
          "versus.min_change: must be a number in [0, 0.5), the smallest "
          "change B over A is called (0.01: 1%), got " +
          change.dump());
    }
    versus.min_change = change.get<double>();
  }
  if (document.contains("precision") && document.at("precision").is_number())
    versus.precision = document.at("precision").get<double>();
  return versus;
}

VersusSides SidesOf(const VersusSpec& versus, const json& spec) {
  VersusSides sides{spec, spec};
  auto set = [&](json& side, const json& value) {
    const auto [model, arg] = ModelArgAxis(versus.axis);
    if (!model.empty()) {
      if (!side.contains("model_args") || !side["model_args"].is_object())
        side["model_args"] = json::object();
      side["model_args"][arg] = value;
      return;
    }
    // As the matrix writes a job: a null of an axis that defaults to none, technique
    // eager and a slowdown of 0 leave the key out.
    const bool absent = (value.is_null() && kAbsentWhenNull.count(versus.axis)) ||
                        (versus.axis == "technique" && value == "eager") ||
                        (versus.axis == "slowdown" && value == 0);
    if (absent) {
      side.erase(versus.axis);
    } else {
      side[versus.axis] = value;
    }
  };
  set(sides.a, versus.a);
  set(sides.b, versus.b);
  return sides;
}

bool PairsInOneProcess(const std::string& axis) {
  return kOneProcessAxes.count(axis) > 0 || !ModelArgAxis(axis).first.empty();
}

std::string ResolvePairing(const VersusSpec& versus) {
  if (versus.pairing != "auto") return versus.pairing;
  return PairsInOneProcess(versus.axis) ? "in_process" : "interleaved";
}

}  // namespace benchfleet
