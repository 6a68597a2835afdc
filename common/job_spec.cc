// The job spec's top level: its keys read in order, each part by its section
// (common/job_spec_sections.h), then the checks of what the parts may run with. Sections
// return Status; the public functions of common/job_spec.h hand a refusal back as a
// JobSpecError (ToJobSpecError).

#include "common/job_spec.h"

#include <algorithm>
#include <utility>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"
#include "common/thread_placement.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// The job's flags, each true or false where present.
Status ReadFlags(const json& job, JobSpec* spec) {
  for (const auto& [key, flag] :
       {std::make_pair("onednn", &spec->onednn), std::make_pair("profile", &spec->profile),
        std::make_pair("checkpointing", &spec->checkpointing)}) {
    if (!job.contains(key)) continue;
    ASSIGN_OR_RETURN(*flag, ReadBool(job.at(key), key));
  }
  return Status::Ok();
}

// How the job's process runs: threads, OpenMP, seed, timing, repeats and host check.
Status ReadRuntime(const json& job, JobSpec* spec) {
  ASSIGN_OR_RETURN(spec->threads, ReadRequiredInt(job, "threads", 1, kMaxJobThreads));
  if (job.contains("interop_threads")) {
    ASSIGN_OR_RETURN(spec->interop_threads,
                     ReadInt(job.at("interop_threads"), "interop_threads", 1, kMaxJobThreads));
  }
  RETURN_IF_ERROR(ReadFlags(job, spec));
  if (job.contains("omp_wait_policy") && !job.at("omp_wait_policy").is_null()) {
    const json& policy = job.at("omp_wait_policy");
    const std::vector<std::string>& known = KnownOmpWaitPolicies();
    if (!policy.is_string() ||
        std::find(known.begin(), known.end(), policy.get<std::string>()) == known.end()) {
      return FieldError("omp_wait_policy",
                        "omp_wait_policy must be one of " + Join(known) + ", got " + policy.dump());
    }
    spec->omp_wait_policy = policy.get<std::string>();
  }
  if (job.contains("seed")) {
    ASSIGN_OR_RETURN(const std::int64_t seed, ReadInt(job.at("seed"), "seed", 0, kNoLimit));
    spec->seed = static_cast<std::uint64_t>(seed);
  }
  if (job.contains("timing") && !job.at("timing").is_null()) {
    RETURN_IF_ERROR(ReadTiming(job.at("timing"), &spec->timing));
  }
  RETURN_IF_ERROR(ReadProcessRepeats(job, &spec->processes, &spec->precision));
  if (job.contains("host_check")) {
    ASSIGN_OR_RETURN(spec->host_check, ReadChoice(job, "host_check", KnownHostCheckPolicies()));
  }
  if (job.contains("slowdown") && !job.at("slowdown").is_null()) {
    const json& slowdown = job.at("slowdown");
    if (!slowdown.is_number() || !(slowdown.get<double>() >= 0) ||
        !(slowdown.get<double>() <= kMaxSlowdown)) {
      return FieldError("slowdown",
                        "slowdown must be a number in [0, 1]: the share of an iteration of "
                        "extra work each iteration does (0.05: 5% slower), got " +
                            slowdown.dump());
    }
    spec->slowdown = slowdown.get<double>();
  }
  return Status::Ok();
}

// The batch (where a search starts), replicas and placement: how many copies of the
// model, at which batch, on which agents.
Status ReadBatchAndCopies(const json& job, JobSpec* spec) {
  if (job.contains("search")) {
    ASSIGN_OR_RETURN(spec->max_batch, ReadSearch(job.at("search")));
  }
  // A search starts at batch_size: 1 unless given.
  if (spec->max_batch && !job.contains("batch_size")) {
    spec->batch_size = 1;
  } else {
    ASSIGN_OR_RETURN(spec->batch_size, ReadRequiredInt(job, "batch_size", 1, kNoLimit));
  }
  if (job.contains("replicas")) {
    ASSIGN_OR_RETURN(spec->replicas, ReadInt(job.at("replicas"), "replicas", 1, kMaxWorldSize));
  }
  if (job.contains(kSpreadPlacementKey)) {
    const json& placement = job.at(kSpreadPlacementKey);
    if (placement != "each" && placement != "any" && placement != kSpreadPlacement) {
      return FieldError(kSpreadPlacementKey,
                        "placement must be \"each\", \"any\" or \"spread\" (its sweep's), got " +
                            placement.dump());
    }
    spec->spread = placement == kSpreadPlacement;
  }
  if (job.contains("replica")) {
    ASSIGN_OR_RETURN(spec->replica, ReadReplica(job.at("replica"), spec->replicas));
  }
  if (job.contains("duet") && !job.at("duet").is_null()) {
    json duet = job.at("duet");
    if (duet.is_object()) duet["count"] = 2;
    StatusOr<ReplicaSpec> read = ReadReplica(duet, 2);
    if (!read.ok()) {
      std::string message = read.status().message();
      for (const std::string from : {"replica.", "replica"}) {
        for (size_t at = message.find(from); at != std::string::npos;
             at = message.find(from, at + 4))
          message.replace(at, from.size(), from == "replica." ? "duet." : "duet");
      }
      return FieldError("duet", message);
    }
    spec->duet = std::move(read).value();
  }
  return Status::Ok();
}

// The parts of a job that change what runs: its ranks, pruning, a reference, the
// scenario, the torch and the technique.
Status ReadVariants(const json& job, JobSpec* spec) {
  if (job.contains("distributed")) {
    ASSIGN_OR_RETURN(spec->distributed, ReadDistributed(job.at("distributed")));
  }
  if (job.contains("parallel")) {
    ASSIGN_OR_RETURN(spec->parallel, ReadParallel(job.at("parallel")));
  }
  if (job.contains("prune") && !job.at("prune").is_null()) {
    ASSIGN_OR_RETURN(spec->prune, ReadPrune(job.at("prune")));
  }
  if (job.contains("reference") && !job.at("reference").is_null()) {
    ASSIGN_OR_RETURN(spec->reference, ReadReference(job.at("reference"), *spec));
  }
  if (job.contains("scenario") && !job.at("scenario").is_null()) {
    RETURN_IF_ERROR(ReadScenario(job.at("scenario"), spec));
  }
  if (job.contains("torch")) {
    ASSIGN_OR_RETURN(spec->torch, ReadTorch(job.at("torch")));
  }
  if (job.contains("technique")) {
    ASSIGN_OR_RETURN(spec->technique, ReadChoice(job, "technique", KnownTechniques()));
  }
  return Status::Ok();
}

// Combinations that are each valid alone but cannot run together. The order decides
// which refusal a job with several faults gets.
Status CheckCombinations(const JobSpec& spec, bool one_rank, const std::string& thread_placement) {
  RETURN_IF_ERROR(CheckSearchAndReplicas(spec));
  if (IsCollectiveModel(spec.model) || spec.parallel || spec.distributed) {
    RETURN_IF_ERROR(CheckAcrossRanks(spec, one_rank));
  } else {
    RETURN_IF_ERROR(CheckDtype(spec));
  }
  RETURN_IF_ERROR(CheckPruneAndReference(spec));
  RETURN_IF_ERROR(CheckTechniques(spec));
  RETURN_IF_ERROR(CheckScenario(spec));
  RETURN_IF_ERROR(CheckCompiled(spec));
  RETURN_IF_ERROR(CheckProcesses(spec));
  return CheckThreadPlacement(spec, thread_placement);
}

// A worker's job carries its identity (`require_identity`) and runs one rank of a gang;
// a sweep's combination has neither.
StatusOr<JobSpec> ReadJob(const json& job, bool require_identity) {
  if (!job.is_object()) {
    return FieldError("", "the job must be a JSON object, got " + std::string(job.type_name()));
  }
  JobSpec spec;
  if (require_identity) {
    ASSIGN_OR_RETURN(spec.job_id, ReadRequiredInt(job, "job_id", 0, kNoLimit));
    if (job.contains("attempt")) {
      ASSIGN_OR_RETURN(spec.attempt, ReadInt(job.at("attempt"), "attempt", 1, kNoLimit));
    }
  }
  ASSIGN_OR_RETURN(spec.model, ReadChoice(job, "model", KnownModels()));
  const json args = job.value("model_args", json(nullptr));
  if (!args.is_null() && !args.is_object()) {
    return FieldError("model_args", "model_args must be an object, got " + args.dump());
  }
  RETURN_IF_ERROR(ReadModelArgs(args.is_null() ? json::object() : args, &spec));
  ASSIGN_OR_RETURN(spec.mode, ReadChoice(job, "mode", KnownModes()));
  ASSIGN_OR_RETURN(spec.dtype, ReadChoice(job, "dtype", KnownDtypes()));
  ASSIGN_OR_RETURN(spec.device, ReadChoice(job, "device", {}));
  RETURN_IF_ERROR(CheckJitMode(spec));
  if (spec.device != "cpu" && !IsCudaDevice(spec.device)) {
    return FieldError(
        "device", "unknown device " + Quoted(spec.device) + "; known devices: " + kKnownDevices);
  }
  RETURN_IF_ERROR(ReadBatchAndCopies(job, &spec));
  RETURN_IF_ERROR(ReadRuntime(job, &spec));
  // The agent's (common/thread_placement.h): checked here, read there from the job.
  std::string thread_placement = kDefaultThreadPlacement;
  if (job.contains("thread_placement") && !job.at("thread_placement").is_null()) {
    ASSIGN_OR_RETURN(thread_placement,
                     ReadChoice(job, "thread_placement", KnownThreadPlacements()));
  }
  RETURN_IF_ERROR(ReadVariants(job, &spec));
  RETURN_IF_ERROR(CheckCombinations(spec, /*one_rank=*/require_identity, thread_placement));
  if (spec.slowdown > 0 &&
      (spec.device != "cpu" || !RunsInOneProcess(spec) || spec.scenario != "offline")) {
    return FieldError("slowdown",
                      "slowdown adds work to the iterations of a CPU job of one worker process "
                      "timed offline; this job is not one");
  }
  if (job.contains("versus") && !job.at("versus").is_null()) {
    ASSIGN_OR_RETURN(const json side_b,
                     ReadInProcessVersus(job.at("versus"), &spec.versus_b_first));
    // Side B's job, read by the same rules; it shares this process with side A.
    StatusOr<JobSpec> b = ReadJob(side_b, require_identity);
    if (!b.ok())
      return FieldError("versus.b." + ToJobSpecError(b.status()).field,
                        "versus.b: " + b.status().message());
    spec.versus_b = std::make_shared<const JobSpec>(std::move(b).value());
    RETURN_IF_ERROR(CheckInProcessVersus(spec, side_b, job));
  }
  return spec;
}

std::optional<JobSpec> Parse(const json& job, bool require_identity, JobSpecError* error) {
  StatusOr<JobSpec> spec = ReadJob(job, require_identity);
  if (!spec.ok()) {
    *error = ToJobSpecError(spec.status());
    return std::nullopt;
  }
  return std::move(spec).value();
}

}  // namespace

std::optional<JobSpec> ParseJobSpec(const json& job, JobSpecError* error) {
  return Parse(job, /*require_identity=*/true, error);
}

std::optional<JobSpec> ParseJobConfig(const json& job, JobSpecError* error) {
  return Parse(job, /*require_identity=*/false, error);
}

bool ParseTiming(const json& timing, TimingSpec* out, JobSpecError* error) {
  const Status status = ReadTiming(timing, out);
  if (!status.ok()) *error = ToJobSpecError(status);
  return status.ok();
}

bool ReadRepeats(const json& holder, std::int64_t* processes, std::optional<double>* precision,
                 JobSpecError* error) {
  const Status status = ReadProcessRepeats(holder, processes, precision);
  if (!status.ok()) *error = ToJobSpecError(status);
  return status.ok();
}

const std::vector<std::string>& KnownHostCheckPolicies() {
  static const std::vector<std::string> policies = {"record", "wait", "refuse"};
  return policies;
}

const std::vector<std::string>& KnownModes() {
  static const std::vector<std::string> modes = {"inference", "train"};
  return modes;
}

const std::vector<std::string>& KnownDtypes() {
  static const std::vector<std::string> dtypes = {"fp32", "tf32", "bf16", "int8"};
  return dtypes;
}

const std::vector<std::string>& KnownOmpWaitPolicies() {
  static const std::vector<std::string> policies = {"default", "passive", "active"};
  return policies;
}

std::optional<std::string> OmpWaitPolicyVariable(const std::string& policy) {
  if (policy == "passive") return "PASSIVE";
  if (policy == "active") return "ACTIVE";
  return std::nullopt;
}

std::string JobOmpWaitPolicy(const json& job) {
  if (!job.is_object()) return "default";
  const auto it = job.find("omp_wait_policy");
  return it != job.end() && it->is_string() ? it->get<std::string>() : "default";
}

bool IsCudaDevice(const std::string& device) {
  if (device == "cuda") return true;
  const std::string prefix = "cuda:";
  if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(device.begin() + static_cast<std::ptrdiff_t>(prefix.size()), device.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace benchfleet
