#ifndef BENCHFLEET_WORKER_JOB_SPEC_H_
#define BENCHFLEET_WORKER_JOB_SPEC_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "worker/sampler.h"

namespace benchfleet::worker {

// Used when a job omits them (the values in schemas/worker.md).
inline constexpr double kDefaultWarmupSeconds = 0.2;
inline constexpr double kDefaultMinTimeSeconds = 0.5;
inline constexpr double kDefaultMaxTimeSeconds = 5.0;
inline constexpr double kDefaultTargetIqr = 0.05;
inline constexpr std::int64_t kDefaultInteropThreads = 1;
inline const std::vector<std::int64_t> kDefaultMlpLayers = {1024, 1024, 10};

// A thread count above this is a typo, not an experiment.
inline constexpr std::int64_t kMaxThreads = 4096;

// A job after validation: every field present and within range.
struct JobSpec {
  std::int64_t job_id = 0;
  std::int64_t attempt = 1;
  std::string model;                 // "mlp"
  std::vector<std::int64_t> layers;  // mlp: feature sizes, input first
  std::string mode;                  // "inference"
  std::string dtype;                 // "fp32"
  std::string device;                // "cpu", "cuda" or "cuda:N"
  std::int64_t batch_size = 0;
  std::int64_t threads = 0;
  std::int64_t interop_threads = kDefaultInteropThreads;
  std::uint64_t seed = 0;
  TimingOptions timing;
};

// Validates `job` (the job JSON of schemas/worker.md). On failure returns
// nullopt and sets *error to a message that names the offending field and
// what it accepts. Unknown top-level keys are ignored (the coordinator may
// annotate jobs); unknown keys inside model_args and timing are errors,
// because a typo there would silently change what is measured.
std::optional<JobSpec> ParseJobSpec(const nlohmann::json& job, std::string* error);

// True for "cuda" and "cuda:N"; such jobs pass parsing and are refused at
// run time when the LibTorch build or host has no usable GPU.
bool IsCudaDevice(const std::string& device);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_JOB_SPEC_H_
