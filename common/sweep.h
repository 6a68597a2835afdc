// The sweep file: what a user writes (schemas/sweep.md), its validation, its expansion
// into job specs, and the matching of a sweep's `select` against an agent.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

using nlohmann::json;

struct TimingSpec {
  double warmup_s = 0.2;
  double min_time_s = 0.5;
  double max_time_s = 5.0;
  double target_iqr = 0.05;  // stop sampling once IQR / median is below this
};

// "each": every combination runs once on every matching agent (host comparison).
// "any": every combination runs once, on whichever matching agent is free first.
enum class Placement { kEach, kAny };

struct Sweep {
  std::string name;
  json select = json::object();
  Placement placement = Placement::kEach;
  TimingSpec timing;
  double timeout_s = 0;  // per job; 0 = derived from timing
  int64_t seed = 0;
  json model_args = json::object();  // per model name, e.g. {"mlp": {"layers": [...]}}
  // One job spec per combination of the matrix, in a stable order.
  std::vector<json> combinations;
  json source;  // the sweep as written, normalised (stored with the sweep)
};

// Models, modes, dtypes and devices the workers accept (schemas/sweep.md).
const std::vector<std::string>& KnownModels();

// Validates a parsed sweep document. Errors name the field: "matrix.batch_size[1]: must
// be a positive integer, got -4".
StatusOr<Sweep> ParseSweep(const json& document);

// Same, from the text of a sweep file.
StatusOr<Sweep> ParseSweepText(const std::string& text);

// The per-job timeout in seconds: the sweep's own, or one derived from its timing.
double JobTimeoutSeconds(const Sweep& sweep);

// What the scheduler knows of an agent when matching a `select`.
struct AgentDescription {
  std::string name;
  std::vector<std::string> tags;
  json capabilities = json::object();  // see schemas/protocol.md, message "register"
};

// True when the agent satisfies every key of `select` (an empty select matches all).
bool AgentMatches(const json& select, const AgentDescription& agent);

}  // namespace benchfleet
