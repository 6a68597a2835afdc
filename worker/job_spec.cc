#include "worker/job_spec.h"

#include <cmath>
#include <cstddef>
#include <limits>

namespace benchfleet::worker {
namespace {

using nlohmann::json;

constexpr const char* kKnownModels = "mlp";
constexpr const char* kKnownModes = "inference";
constexpr const char* kKnownDtypes = "fp32";
constexpr const char* kKnownDevices = "cpu, cuda, cuda:N";

std::string Quoted(const std::string& s) { return json(s).dump(); }

// Reads an integer in [min, max] from `value`, describing it as `name` in errors.
bool ReadInt(const json& value, const std::string& name, std::int64_t min, std::int64_t max,
             std::int64_t* out, std::string* error) {
  bool ok = false;
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    ok = v <= static_cast<std::uint64_t>(max) && static_cast<std::int64_t>(v) >= min;
    if (ok) *out = static_cast<std::int64_t>(v);
  } else if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    ok = v >= min && v <= max;
    if (ok) *out = v;
  }
  if (!ok) {
    const std::string range =
        max == std::numeric_limits<std::int64_t>::max()
            ? "an integer >= " + std::to_string(min)
            : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    *error = name + " must be " + range + ", got " + value.dump();
  }
  return ok;
}

bool ReadRequiredInt(const json& job, const char* key, std::int64_t min, std::int64_t max,
                     std::int64_t* out, std::string* error) {
  if (!job.contains(key)) {
    *error = std::string("missing ") + key;
    return false;
  }
  return ReadInt(job.at(key), key, min, max, out, error);
}

// Reads a string field and checks it against `accepted` (a single value).
bool ReadChoice(const json& job, const char* key, const char* noun_plural, const char* accepted,
                std::string* out, std::string* error) {
  if (!job.contains(key)) {
    *error = std::string("missing ") + key + "; known " + noun_plural + ": " + accepted;
    return false;
  }
  const json& value = job.at(key);
  if (!value.is_string()) {
    *error = std::string(key) + " must be a string, got " + value.dump();
    return false;
  }
  *out = value.get<std::string>();
  return true;
}

bool ReadMlpArgs(const json& job, JobSpec* spec, std::string* error) {
  if (!job.contains("model_args") || job.at("model_args").is_null()) {
    spec->layers = kDefaultMlpLayers;
    return true;
  }
  const json& args = job.at("model_args");
  if (!args.is_object()) {
    *error = "model_args must be an object, got " + args.dump();
    return false;
  }
  for (const auto& item : args.items()) {
    if (item.key() != "layers") {
      *error = "unknown key " + Quoted(item.key()) + " in model_args; known keys for mlp: layers";
      return false;
    }
  }
  if (!args.contains("layers")) {
    *error = "model_args.layers is missing; give at least 2 positive sizes, e.g. [1024, 1024, 10]";
    return false;
  }
  const json& layers = args.at("layers");
  if (!layers.is_array() || layers.size() < 2) {
    *error =
        "model_args.layers must be an array of at least 2 positive sizes (e.g. [1024, 1024, "
        "10]), got " +
        layers.dump();
    return false;
  }
  spec->layers.clear();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    std::int64_t size = 0;
    if (!ReadInt(layers[i], "model_args.layers[" + std::to_string(i) + "]", 1,
                 std::numeric_limits<std::int64_t>::max(), &size, error)) {
      return false;
    }
    spec->layers.push_back(size);
  }
  return true;
}

bool ReadSeconds(const json& timing, const char* key, double* out, std::string* error) {
  if (!timing.contains(key)) return true;  // keep the default
  const json& value = timing.at(key);
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
    *error = std::string("timing.") + key + " must be a positive number, got " + value.dump();
    return false;
  }
  *out = value.get<double>();
  return true;
}

bool ReadTiming(const json& job, TimingOptions* timing, std::string* error) {
  *timing = TimingOptions{kDefaultWarmupSeconds, kDefaultMinTimeSeconds, kDefaultMaxTimeSeconds,
                          kDefaultTargetIqr};
  if (!job.contains("timing") || job.at("timing").is_null()) return true;
  const json& t = job.at("timing");
  if (!t.is_object()) {
    *error = "timing must be an object, got " + t.dump();
    return false;
  }
  for (const auto& item : t.items()) {
    const std::string& k = item.key();
    if (k != "warmup_s" && k != "min_time_s" && k != "max_time_s" && k != "target_iqr") {
      *error = "unknown key " + Quoted(k) +
               " in timing; known keys: warmup_s, min_time_s, max_time_s, target_iqr";
      return false;
    }
  }
  if (!ReadSeconds(t, "warmup_s", &timing->warmup_s, error) ||
      !ReadSeconds(t, "min_time_s", &timing->min_time_s, error) ||
      !ReadSeconds(t, "max_time_s", &timing->max_time_s, error) ||
      !ReadSeconds(t, "target_iqr", &timing->target_iqr, error)) {
    return false;
  }
  if (timing->min_time_s > timing->max_time_s) {
    *error = "timing.min_time_s (" + json(timing->min_time_s).dump() +
             ") must not exceed timing.max_time_s (" + json(timing->max_time_s).dump() + ")";
    return false;
  }
  if (timing->target_iqr >= 1) {
    *error = "timing.target_iqr must be in (0, 1), got " + json(timing->target_iqr).dump();
    return false;
  }
  return true;
}

}  // namespace

bool IsCudaDevice(const std::string& device) {
  if (device == "cuda") return true;
  const std::string prefix = "cuda:";
  if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  for (std::size_t i = prefix.size(); i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9') return false;
  }
  return true;
}

std::optional<JobSpec> ParseJobSpec(const json& job, std::string* error) {
  if (!job.is_object()) {
    *error = "the job must be a JSON object, got " + std::string(job.type_name());
    return std::nullopt;
  }
  constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
  JobSpec spec;
  if (!ReadRequiredInt(job, "job_id", 0, kNoLimit, &spec.job_id, error)) return std::nullopt;
  if (job.contains("attempt") &&
      !ReadInt(job.at("attempt"), "attempt", 1, kNoLimit, &spec.attempt, error)) {
    return std::nullopt;
  }

  if (!ReadChoice(job, "model", "models", kKnownModels, &spec.model, error)) return std::nullopt;
  if (spec.model != "mlp") {
    *error = "unknown model " + Quoted(spec.model) + "; known models: " + kKnownModels;
    return std::nullopt;
  }
  if (!ReadMlpArgs(job, &spec, error)) return std::nullopt;

  if (!ReadChoice(job, "mode", "modes", kKnownModes, &spec.mode, error)) return std::nullopt;
  if (spec.mode != "inference") {
    *error = "unknown mode " + Quoted(spec.mode) + "; known modes: " + kKnownModes;
    return std::nullopt;
  }
  if (!ReadChoice(job, "dtype", "dtypes", kKnownDtypes, &spec.dtype, error)) return std::nullopt;
  if (spec.dtype != "fp32") {
    *error = "unknown dtype " + Quoted(spec.dtype) + "; known dtypes: " + kKnownDtypes;
    return std::nullopt;
  }
  if (!ReadChoice(job, "device", "devices", kKnownDevices, &spec.device, error)) {
    return std::nullopt;
  }
  if (spec.device != "cpu" && !IsCudaDevice(spec.device)) {
    *error = "unknown device " + Quoted(spec.device) + "; known devices: " + kKnownDevices;
    return std::nullopt;
  }

  if (!ReadRequiredInt(job, "batch_size", 1, kNoLimit, &spec.batch_size, error) ||
      !ReadRequiredInt(job, "threads", 1, kMaxThreads, &spec.threads, error)) {
    return std::nullopt;
  }
  if (job.contains("interop_threads") && !ReadInt(job.at("interop_threads"), "interop_threads", 1,
                                                  kMaxThreads, &spec.interop_threads, error)) {
    return std::nullopt;
  }
  if (job.contains("seed")) {
    std::int64_t seed = 0;
    if (!ReadInt(job.at("seed"), "seed", 0, kNoLimit, &seed, error)) return std::nullopt;
    spec.seed = static_cast<std::uint64_t>(seed);
  }
  if (!ReadTiming(job, &spec.timing, error)) return std::nullopt;
  return spec;
}

}  // namespace benchfleet::worker
