#include "common/sweep.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "common/job_spec.h"
#include "common/limits.h"
#include "common/protocol.h"

namespace benchfleet {
namespace {

const std::vector<std::string> kTopKeys = {
    "name",      "select",      "placement",  "matrix",   "timing",  "models",  "timeout_s",
    "seed",      "description", "regression", "labels",   "exclude", "invalid", "search",
    "processes", "precision",   "host_check", "slowdown", "versus"};
const std::vector<std::string> kSelectKeys = {"device", "name", "tags", "cpu_model", "gpu_model"};

// Upper bounds that catch typos (batch 1e9) before they reach a worker.
constexpr int64_t kMaxBatchSize = 1 << 20;
constexpr int64_t kMaxThreads = 1024;
constexpr size_t kMaxCombinations = 100000;
// Labels: a handful of short key=value pairs (commit=abc123, team=infra).
constexpr size_t kMaxLabels = 32;
constexpr size_t kMaxLabelKey = 64;
constexpr size_t kMaxLabelValue = 256;
constexpr size_t kMaxExcludes = 1000;

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
      // How idle OpenMP threads wait (null: the runtime's default, and the job says
      // nothing).
      {"omp_wait_policy", json::array({nullptr})},
      // Where the threads go (common/thread_placement.h; null: the default, cores).
      {"thread_placement", json::array({nullptr})},
      // Techniques a job may add (schemas/worker.md); null: the job leaves the key out, so
      // a job without them keeps the spec, and the series, it had before they existed.
      {"profile", json::array({nullptr})},
      {"checkpointing", json::array({nullptr})},
      // A job of several ranks (null: one process), and the collectives' message size.
      {"parallel", json::array({nullptr})},
      {"bytes", json::array({nullptr})},
      // Pruning and a reference model to compare with (null: none).
      {"prune", json::array({nullptr})},
      {"reference", json::array({nullptr})},
      // Copies of each job on one agent (null: one, and the job says nothing).
      {"replicas", json::array({nullptr})},
      // How queries reach the model (null: offline, the timed loop at batch_size).
      {"scenario", json::array({nullptr})},
      // How a zoo model runs (null: eager), and on which LibTorch of the agent's workers
      // (null: its first). Innermost, so that the versions (and techniques) of one
      // configuration run one after another, interleaved, on the same host.
      {"technique", json::array({nullptr})},
      {"torch", json::array({nullptr})}};
  return axes;
}

// Axes whose null value leaves the key out of the job (its default: none, or off), so a
// sweep that does not name them gives its jobs the spec, and the series, they had before.
// A null batch_size is a search's (it starts at 1).
const std::set<std::string> kAbsentWhenNull = {
    "parallel",   "prune",    "reference",       "profile",   "checkpointing", "replicas",
    "batch_size", "scenario", "omp_wait_policy", "technique", "torch",         "thread_placement"};

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
  if (key != "batch_size" && key != "threads" && key != "replicas") return values;
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    int64_t max = key == "batch_size" ? kMaxBatchSize
                  : key == "threads"  ? kMaxThreads
                                      : kMaxWorldSize;
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

// How deeply a JSON value nests, by its first elements: 5 is 0, [5] is 1, [[5]] is 2.
int NestDepth(const json& value) {
  return value.is_array() ? 1 + (value.empty() ? 0 : NestDepth(value[0])) : 0;
}

// One model's arguments with one value of each of its argument axes.
struct ModelVariant {
  json args;
  std::map<std::string, size_t> index;  // argument axis -> which of its values
};

// Each model's variants: its models.<model> object, with every argument nested one
// level deeper than the model takes (ModelArgDepth) expanded as an axis, the first
// argument turning slowest. Arguments of models the matrix does not (yet) name are
// checked too: a typo there is as wrong as anywhere else.
StatusOr<std::map<std::string, std::vector<ModelVariant>>> ParseModels(const json& models) {
  if (!models.is_object()) return InvalidArgument("models: must be an object keyed by model name");
  std::map<std::string, std::vector<ModelVariant>> variants;
  for (const auto& [model, args] : models.items()) {
    if (!Contains(KnownModels(), model)) {
      return InvalidArgument("models." + model +
                             ": unknown model; known models: " + Join(KnownModels()));
    }
    if (!args.is_object()) return InvalidArgument("models." + model + ": must be an object");
    std::vector<ModelVariant> expanded = {{json::object(), {}}};
    for (const auto& [key, value] : args.items()) {
      const std::optional<int> depth = ModelArgDepth(model, key);
      if (!depth || NestDepth(value) != *depth + 1) {
        for (ModelVariant& v : expanded)
          v.args[key] = value;  // one value (ParseJobConfig judges it)
        continue;
      }
      if (value.empty())
        return InvalidArgument("models." + model + "." + key + ": an axis must not be empty");
      if (expanded.size() * value.size() > kMaxCombinations) {
        return InvalidArgument("models." + model + ": more combinations than the limit of " +
                               std::to_string(kMaxCombinations));
      }
      std::vector<ModelVariant> next;
      for (const ModelVariant& v : expanded) {
        for (size_t i = 0; i < value.size(); ++i) {
          ModelVariant w = v;
          w.args[key] = value[i];
          w.index[key] = i;
          next.push_back(std::move(w));
        }
      }
      expanded = std::move(next);
    }
    for (const ModelVariant& v : expanded) {
      const json probe = {{"model", model},  {"model_args", v.args}, {"mode", "inference"},
                          {"dtype", "fp32"}, {"device", "cpu"},      {"batch_size", 1},
                          {"threads", 1}};
      JobSpecError error;
      if (!ParseJobConfig(probe, &error)) {
        std::string field = SweepField(error.field, model, {}, {});
        const std::string arg =
            error.field.substr(0, error.field.find_first_of(".[", sizeof("model_args")));
        for (const auto& [key, i] : v.index) {
          if (arg == "model_args." + key)
            field = "models." + model + "." + key + "[" + std::to_string(i) + "]";
        }
        return InvalidArgument(field + ": " + error.message);
      }
    }
    variants[model] = std::move(expanded);
  }
  return variants;
}

Status ValidateLabels(const json& labels) {
  if (!labels.is_object()) return InvalidArgument("labels: must be an object of strings");
  if (labels.size() > kMaxLabels) {
    return InvalidArgument("labels: at most " + std::to_string(kMaxLabels) + " labels, got " +
                           std::to_string(labels.size()));
  }
  for (const auto& [key, value] : labels.items()) {
    const bool key_ok =
        !key.empty() && key.size() <= kMaxLabelKey &&
        std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    if (!key_ok) {
      return InvalidArgument("labels: the key \"" + key.substr(0, kMaxLabelKey) +
                             "\" must be 1 to 64 letters, digits, '_', '-' or '.'");
    }
    if (!value.is_string() || value.get<std::string>().size() > kMaxLabelValue) {
      return InvalidArgument("labels." + key + ": must be a string of at most 256 characters");
    }
  }
  return Status::Ok();
}

Status ValidateExclude(const json& exclude) {
  if (!exclude.is_array())
    return InvalidArgument("exclude: must be an array of partial combinations");
  if (exclude.size() > kMaxExcludes) {
    return InvalidArgument("exclude: at most " + std::to_string(kMaxExcludes) + " entries");
  }
  std::vector<std::string> axis_keys;
  for (const auto& [key, fallback] : AxisDefaults()) axis_keys.push_back(key);
  for (size_t i = 0; i < exclude.size(); ++i) {
    const std::string where = "exclude[" + std::to_string(i) + "]";
    if (!exclude[i].is_object() || exclude[i].empty()) {
      return InvalidArgument(where +
                             ": must be a non-empty object of matrix axes, e.g. "
                             "{\"model\": \"mlp\", \"dtype\": \"int8\"}");
    }
    RETURN_IF_ERROR(CheckKeys(exclude[i], axis_keys, where));
  }
  return Status::Ok();
}

// A job's repeats in processes (schemas/sweep.md, Processes): the sweep's, else its
// default where the job runs in one worker process and asks for no precision. The sides
// of a pair (versus) repeat as pairs instead.
void AddRepeats(const Sweep& sweep, json* spec) {
  if (!sweep.host_check.empty()) (*spec)["host_check"] = sweep.host_check;
  if (sweep.slowdown > 0) (*spec)["slowdown"] = sweep.slowdown;
  if (sweep.versus) return;
  if (sweep.precision) (*spec)["precision"] = *sweep.precision;
  if (sweep.processes) {
    (*spec)["processes"] = *sweep.processes;
    return;
  }
  if (sweep.precision || sweep.default_processes <= 1) return;
  for (const char* key : {"parallel", "replicas", "search", "distributed"}) {
    if (spec->contains(key) && !(*spec)[key].is_null() && (*spec)[key] != 1) return;
  }
  const json& model = spec->value("model", json());
  if (model.is_string() && IsCollectiveModel(model.get<std::string>())) return;
  (*spec)["processes"] = sweep.default_processes;
}

// Calls `fn` with the job spec of combinations [first, first + count) and their index
// on every axis, in order: an odometer over the axes, the last one turning fastest.
Status Expand(const Sweep& sweep, size_t first, size_t count,
              const std::function<Status(const json& spec, const std::vector<size_t>& index)>& fn) {
  const json timing = {{"warmup_s", sweep.timing.warmup_s},
                       {"min_time_s", sweep.timing.min_time_s},
                       {"max_time_s", sweep.timing.max_time_s},
                       {"target_ci", sweep.timing.target_ci}};
  const std::vector<MatrixAxis>& axes = sweep.axes;
  // Combination `first` in mixed radix: its index on each axis.
  std::vector<size_t> index(axes.size(), 0);
  for (size_t a = axes.size(), rest = first; a-- > 0;) {
    const size_t size = std::max<size_t>(1, axes[a].values.size());
    index[a] = rest % size;
    rest /= size;
  }
  const size_t end =
      std::min(sweep.combination_count, first + std::min(count, sweep.combination_count));
  for (size_t c = first; c < end; ++c) {
    json spec = {{"seed", sweep.seed}, {"timing", timing}};
    if (!sweep.search.is_null()) spec["search"] = sweep.search;
    if (sweep.placement == Placement::kSpread) spec[kSpreadPlacementKey] = kSpreadPlacement;
    json bytes;
    for (size_t a = 0; a < axes.size(); ++a) {
      const json& value = axes[a].values[index[a]];
      if (axes[a].key == "bytes") {
        bytes = value;
      } else if ((!value.is_null() || !kAbsentWhenNull.count(axes[a].key)) &&
                 !(axes[a].key == "technique" && value == "eager")) {
        // technique "eager" is what a job without the key runs: left out, so its series
        // is the one the configuration had before the axis.
        spec[axes[a].key] = value;
      }
    }
    if (const json& args = sweep.model_axis_args[index[kModelAxis]]; !args.is_null()) {
      spec["model_args"] = args;
    }
    AddRepeats(sweep, &spec);
    // The size axis sets the collectives' model_args.bytes; any other model refuses it
    // (CheckCombinations), since it would only repeat the same job.
    if (!bytes.is_null()) {
      if (!spec.contains("model_args") || !spec["model_args"].is_object())
        spec["model_args"] = json::object();
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
  if (!value.is_object())
    return InvalidArgument("regression: must be an object, got " + value.dump());
  RETURN_IF_ERROR(
      CheckKeys(value, {"window", "z", "min_change", "min_for_z", "reruns"}, "regression"));
  auto integer = [&](const char* key, int low, int high, int* into) -> Status {
    if (!value.contains(key)) return Status::Ok();
    const json& v = value[key];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
      return InvalidArgument(std::string("regression.") + key + ": must be an integer from " +
                             std::to_string(low) + " to " + std::to_string(high) + ", got " +
                             v.dump());
    }
    *into = static_cast<int>(v.get<int64_t>());
    return Status::Ok();
  };
  auto number = [&](const char* key, double low, double high, double* into) -> Status {
    if (!value.contains(key)) return Status::Ok();
    const json& v = value[key];
    if (!v.is_number() || !(v.get<double>() > low) || v.get<double>() > high) {
      return InvalidArgument(std::string("regression.") + key + ": must be a number above " +
                             json(low).dump() + " and at most " + json(high).dump() + ", got " +
                             v.dump());
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

size_t CombinationTally::Kept() const {
  size_t n = 0;
  for (const auto& [device, count] : kept) n += count;
  return n;
}

bool Sweep::Excluded(const std::vector<size_t>& index) const {
  for (const json& entry : exclude) {
    bool matches = true;
    for (size_t a = 0; a < axes.size() && matches; ++a) {
      const auto it = entry.find(axes[a].key);
      if (it != entry.end()) matches = *it == axes[a].values[index[a]];
    }
    if (matches) return true;
  }
  return false;
}

std::string Sweep::LeftOut(const json& spec, const std::vector<size_t>& index) const {
  if (Excluded(index)) return "excluded";
  if (!skip_invalid) return "";
  JobSpecError error;
  if (!ParseJobConfig(spec, &error)) return ErrorField(spec, index, error);
  if (StatusOr<JobNeeds> needs = NeedsOf(spec); !needs.ok()) return needs.status().message();
  return "";
}

std::string Sweep::ErrorField(const json& spec, const std::vector<size_t>& index,
                              const JobSpecError& error) const {
  const auto model = spec.find("model");
  const std::string name =
      model != spec.end() && model->is_string() ? model->get<std::string>() : "";
  // model_args.bytes from the size axis is the axis' fault, not models.<model>'s.
  for (size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].key == "bytes" && !axes[a].values[index[a]].is_null() &&
        error.field == "model_args.bytes") {
      return "matrix.bytes[" + std::to_string(index[a]) + "]: " + error.message;
    }
  }
  // A model argument of an axis is that axis' value; the model axis as written.
  const size_t variant = index[kModelAxis];
  const std::string arg =
      error.field.substr(0, error.field.find_first_of(".[", sizeof("model_args")));
  for (const auto& [key, i] : model_axis_arg_index[variant]) {
    if (arg == "model_args." + key) {
      return "models." + name + "." + key + "[" + std::to_string(i) + "]: " + error.message;
    }
  }
  std::vector<size_t> written = index;
  written[kModelAxis] = model_axis_written[variant];
  return SweepField(error.field, name, axes, written) + ": " + error.message;
}

std::string JobPlacement::Key() const {
  const std::string asked = worker.Describe();
  std::string key = asked.empty() ? device : device + " [" + asked + "]";
  if (!versus_worker.empty() || versus_cpus > 0) {
    key += " versus [" + versus_worker.Describe() +
           (versus_cpus > 0 ? std::string(versus_worker.empty() ? "" : ", ") + "duet on " +
                                  std::to_string(versus_cpus) + " CPUs"
                            : "") +
           "]";
  }
  return key;
}

StatusOr<JobNeeds> Sweep::NeedsOf(const json& spec) const {
  ASSIGN_OR_RETURN(JobNeeds needs, NeedsOfJobJson(spec));
  // A package needs its device, and a worker of the torch that made it or a newer one.
  if (spec.value("model", json()) == json("aoti")) {
    const json args = spec.value("model_args", json::object());
    const json sha256 = args.is_object() ? args.value("sha256", json()) : json();
    if (sha256.is_string()) {
      if (auto it = packages.find(sha256.get<std::string>()); it != packages.end()) {
        const std::string device = spec.value("device", json("cpu")).is_string()
                                       ? spec.value("device", json("cpu")).get<std::string>()
                                       : "cpu";
        const std::string kind = device.substr(0, device.find(':'));
        if (kind != it->second.device) {
          return InvalidArgument("device: the AOTInductor package " + sha256.get<std::string>() +
                                 " was compiled for " + it->second.device + ", not for device " +
                                 device + "; compile it for " + kind + " or run it on a " +
                                 it->second.device + " device");
        }
        needs.worker.torch_min = it->second.torch_version;
      }
    }
  }
  return needs;
}

JobPlacement Sweep::PlacementOf(const json& spec, const JobNeeds& needs) {
  JobPlacement placement;
  placement.device =
      PlacementDevice(spec.value("device", json(nullptr)), spec.value("parallel", json(nullptr)));
  placement.worker = needs.worker;
  return placement;
}

namespace {

Combination MakeCombination(const json& spec, const JobNeeds& needs,
                            const JobPlacement& placement) {
  Combination combination;
  combination.spec = spec.dump();
  combination.needs = needs;
  combination.device = placement.device;
  combination.placement = placement.Key();
  return combination;
}

}  // namespace

Status Sweep::ForEachCombination(size_t first, size_t count,
                                 const std::function<Status(const Combination&)>& fn) const {
  const bool may_leave_out = !exclude.empty() || skip_invalid;
  return Expand(*this, first, count, [&](const json& spec, const std::vector<size_t>& index) {
    if (may_leave_out && !LeftOut(spec, index).empty()) return Status::Ok();
    if (!versus) {
      ASSIGN_OR_RETURN(JobNeeds needs, NeedsOf(spec));
      JobPlacement placement = PlacementOf(spec, needs);
      return fn(MakeCombination(spec, needs, placement));
    }
    ASSIGN_OR_RETURN(Combination pair, PairOf(spec));
    return fn(pair);
  });
}

StatusOr<Combination> Sweep::PairOf(const json& spec) const {
  const VersusSides sides = SidesOf(*versus, spec);
  ASSIGN_OR_RETURN(JobNeeds needs_a, NeedsOf(sides.a));
  ASSIGN_OR_RETURN(JobNeeds needs_b, NeedsOf(sides.b));
  JobPlacement placement = PlacementOf(sides.a, needs_a);
  const std::string pairing = ResolvePairing(*versus);
  placement.versus_worker = needs_b.worker == needs_a.worker ? WorkerNeeds{} : needs_b.worker;
  const json threads = sides.a.value("threads", json(1));
  placement.versus_cpus =
      pairing == "duet" ? DuetCpus(threads.is_number_integer() ? threads.get<int64_t>() : 1) : 0;
  json pairing_json = versus->ToJson();
  pairing_json["pairing"] = pairing;
  Combination pair = MakeCombination(sides.a, needs_a, placement);
  pair.versus_b_spec = sides.b.dump();
  pair.versus_b_needs = needs_b;
  pair.versus = std::move(pairing_json);
  pair.versus_cpus = placement.versus_cpus;
  return pair;
}

Status Sweep::CheckCombinations(size_t first, size_t count) {
  CombinationTally tally = checked;
  // A job's objection to `spec`, or none; `needs` set when it has none.
  auto objection = [&](const json& spec, StatusOr<JobNeeds>* needs) -> std::optional<JobSpecError> {
    JobSpecError error;
    if (!ParseJobConfig(spec, &error)) return error;
    *needs = NeedsOf(spec);
    if (needs->ok()) return std::nullopt;
    // "<job field>: why" (NeedsOf names the job field at fault).
    const std::string& message = needs->status().message();
    const size_t colon = message.find(": ");
    return JobSpecError{message.substr(0, colon),
                        colon == std::string::npos ? message : message.substr(colon + 2)};
  };
  Status status =
      Expand(*this, first, count, [&](const json& spec, const std::vector<size_t>& index) {
        ++tally.checked;
        if (Excluded(index)) {
          ++tally.excluded;
          return Status::Ok();
        }
        StatusOr<JobNeeds> needs = InvalidArgument("unchecked");
        std::string reason;
        if (!versus) {
          if (auto error = objection(spec, &needs)) reason = ErrorField(spec, index, *error);
        } else {
          // Each side by the job rules; a fault of the versus axis' value is versus's.
          const VersusSides sides = SidesOf(*versus, spec);
          StatusOr<JobNeeds> needs_b = InvalidArgument("unchecked");
          for (int side = 0; side < 2 && reason.empty(); ++side) {
            const json& one = side == 0 ? sides.a : sides.b;
            auto error = objection(one, side == 0 ? &needs : &needs_b);
            if (!error) continue;
            const std::string arg =
                versus->axis.rfind("models.", 0) == 0
                    ? "model_args." + versus->axis.substr(versus->axis.find('.', 7) + 1)
                    : versus->axis;
            reason =
                error->field.rfind(arg, 0) == 0
                    ? "versus." + versus->axis + "[" + std::to_string(side) + "]: " + error->message
                    : ErrorField(one, index, *error);
          }
        }
        if (!reason.empty()) {
          if (!skip_invalid) return InvalidArgument(reason);
          if (tally.invalid_listed.size() < CombinationTally::kListed) {
            tally.invalid_listed.push_back({{"job", spec}, {"reason", reason}});
          }
          ++tally.invalid;
          return Status::Ok();
        }
        JobPlacement placement = PlacementOf(spec, *needs);
        if (versus) {
          ASSIGN_OR_RETURN(const Combination pair, PairOf(spec));
          placement = PlacementOf(pair.Spec(), pair.needs);
          placement.versus_worker = pair.versus_b_needs.worker == pair.needs.worker
                                        ? WorkerNeeds{}
                                        : pair.versus_b_needs.worker;
          placement.versus_cpus = pair.versus_cpus;
        }
        tally.kept[placement.Key()] += JobsPerCombination();
        tally.placements.emplace(placement.Key(), placement);
        tally.first_index.emplace(placement.Key(), index);
        return Status::Ok();
      });
  if (status.ok()) checked = std::move(tally);
  return status;
}

std::vector<JobPlacement> Sweep::Placements() const {
  CombinationTally tally = checked;
  if (tally.checked < combination_count) {
    Sweep copy = *this;
    copy.checked = {};
    if (!copy.CheckCombinations(0, combination_count).ok()) return {};
    tally = copy.checked;
  }
  std::vector<JobPlacement> out;
  for (const auto& [key, placement] : tally.placements) out.push_back(placement);
  return out;
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
    for (const json& parallel : parallel_values)
      devices.push_back(PlacementDevice(device, parallel));
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

Status Sweep::CheckJobsLeft() const {
  if (checked.Kept() > 0) return Status::Ok();
  std::string why = std::to_string(checked.excluded) + " excluded, " +
                    std::to_string(checked.invalid) + " refused by the job rules";
  if (!checked.invalid_listed.empty())
    why += " (the first: " + checked.invalid_listed[0]["reason"].get<std::string>() + ")";
  return InvalidArgument("every combination of the matrix is left out: " + why);
}

StatusOr<Sweep> ParseSweep(const json& document) {
  ASSIGN_OR_RETURN(Sweep sweep, ParseSweepShape(document));
  RETURN_IF_ERROR(sweep.CheckCombinations(0, sweep.combination_count));
  RETURN_IF_ERROR(sweep.CheckJobsLeft());
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
  if (document.contains("processes") || document.contains("precision")) {
    JobSpecError error;
    int64_t processes = 1;
    std::optional<double> precision;
    if (!ReadRepeats(document, &processes, &precision, &error))
      return InvalidArgument(error.message);
    if (document.contains("processes")) sweep.processes = processes;
    sweep.precision = precision;
  }
  if (document.contains("host_check")) {
    const json& policy = document["host_check"];
    const std::vector<std::string>& known = KnownHostCheckPolicies();
    if (!policy.is_string() ||
        std::find(known.begin(), known.end(), policy.get<std::string>()) == known.end()) {
      return InvalidArgument("host_check: must be \"record\", \"wait\" or \"refuse\", got " +
                             policy.dump());
    }
    sweep.host_check = policy.get<std::string>();
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
  std::map<std::string, std::vector<ModelVariant>> variants;
  if (document.contains("models")) {
    ASSIGN_OR_RETURN(variants, ParseModels(document["models"]));
  }
  if (document.contains("labels")) {
    RETURN_IF_ERROR(ValidateLabels(document["labels"]));
    sweep.labels = document["labels"];
  }
  if (document.contains("exclude")) {
    RETURN_IF_ERROR(ValidateExclude(document["exclude"]));
    sweep.exclude = document["exclude"].get<std::vector<json>>();
  }
  if (document.contains("invalid")) {
    const json& invalid = document["invalid"];
    if (invalid != "refuse" && invalid != "skip") {
      return InvalidArgument("invalid: must be \"refuse\" (the default) or \"skip\", got " +
                             invalid.dump());
    }
    sweep.skip_invalid = invalid == "skip";
  }
  if (document.contains("regression")) {
    // Checked here; the coordinator reads it from the stored sweep when it judges.
    RETURN_IF_ERROR(ParseRegressionPolicy(document["regression"]).status());
  }
  // Checked with each combination (ParseJobConfig), as every job carries it.
  if (document.contains("search")) sweep.search = document["search"];
  if (document.contains("slowdown")) {
    const json& slowdown = document["slowdown"];
    if (!slowdown.is_number() || !(slowdown.get<double>() >= 0) ||
        !(slowdown.get<double>() <= kMaxSlowdown)) {
      return InvalidArgument(
          "slowdown: must be a number in [0, 1], the share of an iteration "
          "of extra work each iteration does (0.05: 5% slower), got " +
          slowdown.dump());
    }
    sweep.slowdown = slowdown.get<double>();
  }
  if (document.contains("versus")) {
    ASSIGN_OR_RETURN(VersusSpec versus, ParseVersus(document));
    sweep.versus = std::move(versus);
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
    // A search starts at batch_size, 1 when the matrix leaves it out (the job's default).
    const bool optional_batch = key == "batch_size" && document.contains("search");
    ASSIGN_OR_RETURN(json values,
                     Axis(*matrix, key, optional_batch ? json::array({nullptr}) : fallback));
    if (key == "model") {
      // Each model once per combination of its argument axes (ParseModels).
      json expanded = json::array();
      for (size_t i = 0; i < values.size(); ++i) {
        const auto it =
            values[i].is_string() ? variants.find(values[i].get<std::string>()) : variants.end();
        const std::vector<ModelVariant> one = {{json(nullptr), {}}};
        for (const ModelVariant& variant : it == variants.end() ? one : it->second) {
          expanded.push_back(values[i]);
          sweep.model_axis_args.push_back(variant.args);
          sweep.model_axis_written.push_back(i);
          sweep.model_axis_arg_index.push_back(variant.index);
        }
      }
      values = std::move(expanded);
    }
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
  ASSIGN_OR_RETURN(json document, ParseSweepJson(text));
  return ParseSweep(document);
}

StatusOr<json> ParseSweepJson(const std::string& text) {
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
  return document;
}

// The longest a job's scenario may serve (every value checked by ParseJobConfig): a
// server or single_stream run stops at max_duration_s, an SLO search after
// kMaxSloProbes such runs, each preparing its model once per batch size besides.
static double ScenarioAllowanceSeconds(const Sweep& sweep) {
  double most = 0;
  for (const MatrixAxis& axis : sweep.axes) {
    if (axis.key != "scenario") continue;
    for (const json& v : axis.values) {
      if (v.is_null() || v == "offline") continue;
      const double run = v.is_object() ? v.value("max_duration_s", ServerScenario{}.max_duration_s)
                                       : ServerScenario{}.max_duration_s;
      const bool search = v.is_object() && v.contains("slo_p99_ms");
      most = std::max(most, (search ? kMaxSloProbes : 1) * run + kScenarioBuildAllowanceS);
    }
  }
  return most;
}

double JobTimeoutSeconds(const Sweep& sweep) {
  if (sweep.timeout_s > 0) return sweep.timeout_s;
  const double one = kJobStartupAllowanceS + 2 * (sweep.timing.warmup_s + sweep.timing.max_time_s) +
                     (sweep.search.is_null() ? 0 : kMaxBatchSearchAllowanceS) +
                     ScenarioAllowanceSeconds(sweep);
  return sweep.versus ? 2 * one : one;
}

const std::vector<std::string>& MatrixAxisNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [key, fallback] : AxisDefaults()) out.push_back(key);
    return out;
  }();
  return names;
}

}  // namespace benchfleet
