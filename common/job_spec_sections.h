// The sections of a job spec (schemas/worker.md), each reading or checking one part of
// it; common/job_spec.cc runs them in order. Every refusal is a FieldError
// (common/job_spec_read.h): "<field>: <message>". Internal to job_spec*.cc: the worker
// and the coordinator include common/job_spec.h only.
//
// Read*: one key of the job (or, for model_args and scenario, what it sets in *spec).
// Check*: the job read whole, for what each part may run with; they run after every
// Read*, in job_spec.cc's order, which decides which refusal a job with several faults
// gets.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/job_spec.h"
#include "common/status.h"

namespace benchfleet {

// common/job_spec_models.cc
// model_args of spec->model (an object; {} when the job has none) into spec's args of
// that model. Unknown keys are errors.
Status ReadModelArgs(const nlohmann::json& args, JobSpec* spec);
// model_args.jit other than "none" with a mode other than inference.
Status CheckJitMode(const JobSpec& spec);

// common/job_spec_parallel.cc
StatusOr<DistributedSpec> ReadDistributed(const nlohmann::json& value);
StatusOr<ParallelSpec> ReadParallel(const nlohmann::json& value);
// A job across ranks: a collective, a job with `parallel`, or one with `distributed`
// (which only those take). A worker runs one rank: it needs the distributed object the
// agents add (`one_rank`).
Status CheckAcrossRanks(const JobSpec& spec, bool one_rank);

// common/job_spec_processes.cc
StatusOr<MaxBatchSearch> ReadSearch(const nlohmann::json& value);
// `replicas`: the job's count, which replica.count must equal.
StatusOr<ReplicaSpec> ReadReplica(const nlohmann::json& value, std::int64_t replicas);
// `processes` and `precision` of a job or a sweep, each where present (ReadRepeats).
Status ReadProcessRepeats(const nlohmann::json& holder, std::int64_t* processes,
                          std::optional<double>* precision);
Status CheckSearchAndReplicas(const JobSpec& spec);
Status CheckProcesses(const JobSpec& spec);
// versus: {"b": side B's job, "first": "a" or "b"} (an in-process pair): side B's JSON.
StatusOr<nlohmann::json> ReadInProcessVersus(const nlohmann::json& value, bool* b_first);
// Both sides of an in-process pair run in one process: one job of one process each, with
// the same process-wide settings (threads, pools, device, torch, placement).
Status CheckInProcessVersus(const JobSpec& spec, const nlohmann::json& side_b,
                            const nlohmann::json& side_a);
Status CheckThreadPlacement(const JobSpec& spec, const std::string& placement);

// common/job_spec_techniques.cc
StatusOr<PruneSpec> ReadPrune(const nlohmann::json& value);
// `job`: the job read so far, whose device, batch and threads the reference runs with.
StatusOr<ReferenceSpec> ReadReference(const nlohmann::json& value, const JobSpec& job);
StatusOr<std::string> ReadTorch(const nlohmann::json& value);
// tf32 and int8 of a job of one process (CheckAcrossRanks has the rules of the others).
Status CheckDtype(const JobSpec& spec);
Status CheckPruneAndReference(const JobSpec& spec);
Status CheckTechniques(const JobSpec& spec);
Status CheckCompiled(const JobSpec& spec);

// common/job_spec_scenario.cc
// `scenario` into spec->scenario and spec->serving; the job's batch_size read before.
Status ReadScenario(const nlohmann::json& value, JobSpec* spec);
Status CheckScenario(const JobSpec& spec);

// common/job_spec_timing.cc
// A `timing` object on top of *timing; a refused one leaves *timing as it was.
Status ReadTiming(const nlohmann::json& value, TimingSpec* timing);

}  // namespace benchfleet
