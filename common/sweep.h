// The sweep file: what a user writes (schemas/sweep.md), its validation and its
// expansion into job specs. Matching jobs to agents is the coordinator's
// (coordinator/matching.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/status.h"

namespace benchfleet {

using nlohmann::json;

// "each": every combination runs once on every matching agent (host comparison).
// "any": every combination runs once, on whichever matching agent is free first.
// "spread": as "any", but a job of several ranks puts each rank on its own agent (a
// gang across agents, docs/scheduling.md); with "each" and "any" its ranks share one.
enum class Placement { kEach, kAny, kSpread };

// The key a job of a "spread" sweep carries ("placement": "spread"), so that the
// coordinator knows to spread its ranks; workers ignore it.
inline constexpr const char* kSpreadPlacementKey = "placement";
inline constexpr const char* kSpreadPlacement = "spread";

// One combination of a sweep's matrix: a job spec as its compact JSON text (what the
// store keeps and the agent receives).
struct Combination {
  std::string spec;
  // Decides where it runs: the spec's device ("cpu" unless it says), but cuda:<S-1>
  // for a pipeline of S stages inside one process (stage s on cuda:s).
  std::string device;
  json Spec() const { return json::parse(spec); }
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

// One matrix axis: the job field it sets and its values, in the order written.
struct MatrixAxis {
  std::string key;
  json values;
};

struct Sweep {
  std::string name;
  json select = json::object();
  Placement placement = Placement::kEach;
  TimingSpec timing;
  double timeout_s = 0;  // per job; 0 = derived from timing
  int64_t seed = 0;
  json model_args = json::object();  // per model name, e.g. {"mlp": {"layers": [...]}}
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
  // (ParseJobConfig), so that nothing is enqueued that a worker would refuse.
  Status CheckCombinations(size_t first, size_t count) const;
  // The placement device (Combination::device) of each pair of values of the matrix's
  // device and parallel axes, so each appears in the same share of the combinations:
  // what placement "each" looks for agents by.
  std::vector<std::string> Devices() const;
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

// The per-job timeout in seconds: the sweep's own, or one derived from its timing.
double JobTimeoutSeconds(const Sweep& sweep);

}  // namespace benchfleet
