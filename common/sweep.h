// The sweep file: what a user writes (schemas/sweep.md), its validation and its
// expansion into job specs. Matching jobs to agents is the coordinator's
// (coordinator/core/matching.h).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_needs.h"
#include "common/job_spec.h"
#include "common/status.h"
#include "common/sweep_versus.h"

namespace benchfleet {

using nlohmann::json;

// "each": every combination runs once on every matching agent (host comparison).
// "any": every combination runs once, on whichever matching agent is free first.
// "spread": as "any", but a job of several ranks puts each rank on its own agent (a
// gang across agents, docs/scheduling.md); with "each" and "any" its ranks share one.
enum class Placement { kEach, kAny, kSpread };

// Where a combination may run (docs/scheduling.md): the device its agent's worker must
// see, and which of the agent's workers may run it. Placement "each" pins agents per
// placement; the coordinator refuses a sweep with a placement no agent has.
struct JobPlacement {
  // The spec's device ("cpu" unless it says), but cuda:<S-1> for a pipeline of S stages
  // inside one process (stage s on cuda:s).
  std::string device;
  WorkerNeeds worker;
  // A pair's (versus): what side B asks of a worker of the same agent, and the CPUs a
  // duet needs there (0: none besides the job's own).
  WorkerNeeds versus_worker;
  int64_t versus_cpus = 0;
  // "cpu", "cuda:1", "cpu [torch 1.13, technique aoti]", "cpu [torch 2.14] versus [torch
  // 2.15]": what `pinned` and CombinationTally::kept are keyed by.
  std::string Key() const;
};

// One combination of a sweep's matrix: a job spec as its compact JSON text (what the
// store keeps and the agent receives).
struct Combination {
  std::string spec;
  JobNeeds needs;         // what it asks of the fleet, stored with the job
  std::string device;     // its placement's device (JobPlacement::device)
  std::string placement;  // its placement's key (JobPlacement::Key)
  json Spec() const { return json::parse(spec); }
  // A sweep with `versus`: this is side A's job; side B's spec and needs, and the
  // pairing (VersusSpec::ToJson, the pairing resolved) stored with side A.
  std::string versus_b_spec;
  JobNeeds versus_b_needs;
  json versus;              // null: no pair
  int64_t versus_cpus = 0;  // a duet's CPUs on one agent (DuetCpus); 0 otherwise
};

// How a sweep's results are judged against their series (docs/regressions.md): a
// result is a candidate when its robust z-score |x - median| / (1.4826 MAD) over the
// last `window` good results exceeds `z` and its relative change exceeds `min_change`
// (below `min_for_z` earlier results, the relative test alone); `reruns` runs of the
// same job on the same host then confirm it or call it noise.
struct RegressionPolicy {
  int window = 30;
  double z = 4;
  double min_change = 0.05;
  int min_for_z = 10;
  int reruns = 3;
};
// The sweep file's "regression" object; errors name the key ("regression.z: ...").
StatusOr<RegressionPolicy> ParseRegressionPolicy(const json& value);

// The model axis' place in Sweep::axes (the expansion order of schemas/sweep.md).
inline constexpr size_t kModelAxis = 1;

// One matrix axis: the job field it sets and its values, in the order written.
struct MatrixAxis {
  std::string key;
  json values;
};

// What checking a sweep's combinations found: how many become jobs, per placement
// device, and which are left out (an `exclude` entry matched, or, with "invalid":
// "skip", the job rules refused them).
struct CombinationTally {
  size_t checked = 0;                              // combinations looked at so far
  std::map<std::string, size_t> kept;              // per placement (JobPlacement::Key)
  std::map<std::string, JobPlacement> placements;  // each key's placement
  // The first combination of each placement, by its index on every axis: which sweep
  // field a placement no agent has comes from.
  std::map<std::string, std::vector<size_t>> first_index;
  size_t excluded = 0;
  size_t invalid = 0;
  // The first kListed invalid ones: {"job": spec, "reason": "matrix.dtype[1]: ..."}.
  static constexpr size_t kListed = 20;
  json invalid_listed = json::array();
  size_t Kept() const;
};

struct Sweep {
  std::string name;
  json labels = json::object();  // label -> value, both strings (--label k=v)
  // Partial combinations left out: each an object of matrix axis -> value.
  std::vector<json> exclude;
  // "invalid": "skip": a combination the job rules refuse is left out and listed
  // (CombinationTally) instead of refusing the sweep.
  bool skip_invalid = false;
  json select = json::object();
  Placement placement = Placement::kEach;
  TimingSpec timing;
  // Repeats in fresh processes (schemas/sweep.md, Processes), copied into every job that
  // runs in one worker process: the sweep's `processes` and `precision` where given;
  // else `default_processes` (the coordinator's --processes), unless `precision` is.
  std::optional<int64_t> processes;
  std::optional<double> precision;
  int64_t default_processes = 1;
  // The sweep's `host_check`, copied into every job; empty: the jobs' default.
  std::string host_check;
  // The sweep's `slowdown` (schemas/worker.md, Slowdown), copied into every job; 0: none.
  double slowdown = 0;
  // The sweep's `versus`: every combination a pair of jobs (sweep_versus.h).
  std::optional<VersusSpec> versus;
  // Jobs each kept combination makes: 2 with versus (its sides), else 1.
  size_t JobsPerCombination() const { return versus ? 2 : 1; }
  double timeout_s = 0;  // per job; 0 = derived from timing
  json search;           // the sweep's "search", copied into every job; null: none
  int64_t seed = 0;
  // Per value of the model axis (axes[kModelAxis]): its model_args (null: the worker's
  // defaults). A model whose arguments have axes ({"seq_len": [128, 512]}) appears once
  // per combination of them; model_axis_written is then the value's index as written,
  // and model_axis_arg_index which value of each argument axis it has.
  std::vector<json> model_axis_args;
  std::vector<size_t> model_axis_written;
  std::vector<std::map<std::string, size_t>> model_axis_arg_index;
  // The matrix, outermost axis first, and how many combinations it makes (each one
  // checked by ParseSweep).
  std::vector<MatrixAxis> axes;
  size_t combination_count = 0;
  // Calls `fn` with each combination in a stable order (the last axis turning fastest),
  // built one at a time, so a 100,000-job sweep never sits in memory whole; stops at
  // the first error `fn` returns. Combination i is the same whichever slice builds it:
  // a large sweep is stored a slice at a time (and after a restart, from where it was).
  Status ForEachCombination(size_t first, size_t count,
                            const std::function<Status(const Combination&)>& fn) const;
  Status ForEachCombination(const std::function<Status(const Combination&)>& fn) const {
    return ForEachCombination(0, combination_count, fn);
  }
  // Checks combinations [first, first + count) against the worker's own job rules
  // (ParseJobConfig), so that nothing is enqueued that a worker would refuse, and counts
  // them into `checked` (checked in order, each slice once).
  Status CheckCombinations(size_t first, size_t count);
  CombinationTally checked;
  // Why combination `spec` (its index on each axis) is left out: empty when it is not,
  // "excluded", or the job rules' objection (with "invalid": "skip").
  std::string LeftOut(const json& spec, const std::vector<size_t>& index) const;
  bool Excluded(const std::vector<size_t>& index) const;
  // An error when the check left no combination to run.
  Status CheckJobsLeft() const;
  // The job rules' objection to a combination, named by the sweep field at fault:
  // "matrix.dtype[1]: ...", "models.transformer.seq_len[0]: ...".
  std::string ErrorField(const json& spec, const std::vector<size_t>& index,
                         const JobSpecError& error) const;
  // The placement device (Combination::device) of each pair of values of the matrix's
  // device and parallel axes, so each appears in the same share of the combinations.
  std::vector<std::string> Devices() const;
  // Every placement of the combinations kept (checking them all when not yet checked):
  // what placement "each" looks for agents by.
  std::vector<JobPlacement> Placements() const;
  // What each AOTInductor package the sweep names by sha256 was compiled for, as the
  // coordinator read it from its copy (common/aoti_package.h): a job of it must run on
  // that device ("cpu", "cuda"), and on a worker of the torch that made it or a newer one
  // (WorkerNeeds::torch_min; empty where the package does not say).
  struct PackageNeeds {
    std::string device;
    std::string torch_version;
  };
  std::map<std::string, PackageNeeds> packages;
  // What combination `spec` asks of the fleet: NeedsOfJobJson, and its package's torch.
  // InvalidArgument when the job's device is not the one its package was compiled for.
  StatusOr<JobNeeds> NeedsOf(const json& spec) const;
  static JobPlacement PlacementOf(const json& spec, const JobNeeds& needs);
  // With `versus`: the pair combination `spec` (the job without the versus axis) makes:
  // side A's job, carrying side B's (SidesOf), their needs and the pairing.
  StatusOr<Combination> PairOf(const json& spec) const;
  // All of them at once, for small sweeps and tests.
  std::vector<Combination> Combinations() const;
  json source;  // the sweep as written, normalised (stored with the sweep)
};

// Validates a parsed sweep document, including every combination of its matrix against
// the worker's own job rules (ParseJobConfig), so that nothing is enqueued that a worker
// would refuse. Errors name the sweep field: "matrix.batch_size[1]: must be a positive
// integer, got -4", "models.matmul.m: model_args.m must be an integer in ...".
StatusOr<Sweep> ParseSweep(const json& document);

// The same without checking each combination (the matrix's size is checked): a large
// sweep's combinations are then checked a slice at a time (CheckCombinations), so that
// the coordinator keeps serving others meanwhile.
StatusOr<Sweep> ParseSweepShape(const json& document);

// Same, from the text of a sweep file.
StatusOr<Sweep> ParseSweepText(const std::string& text);
// The JSON document of a sweep file's text (nesting checked before parsing), not yet
// validated as a sweep.
StatusOr<json> ParseSweepJson(const std::string& text);

// The per-job timeout in seconds: the sweep's own, or one derived from its timing (a pair
// runs its two sides in one hand-out: twice that).
double JobTimeoutSeconds(const Sweep& sweep);

// The matrix's axes, in expansion order (schemas/sweep.md, matrix).
const std::vector<std::string>& MatrixAxisNames();

}  // namespace benchfleet
