// A sweep's `versus` (schemas/sweep.md, Versus): one axis named as the comparison, with
// its two values. Every combination of the rest of the matrix becomes a pair of jobs, side
// A (the first value) and side B (the second), run as pairs on one agent and the same
// CPUs: back to back in random order (interleaved), at once on disjoint CPUs (duet), or
// in one worker process, their blocks of samples alternating (in_process). The answer is
// B over A with its 95% interval over the pairs (docs/results.md, Versus).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_needs.h"
#include "common/status.h"

namespace benchfleet {

// What `versus` may take: its pairing, how many pairs at most, and the smallest change
// it calls one.
inline constexpr int64_t kVersusDefaultMaxPairs = 20;
inline constexpr int64_t kVersusMinPairs = 3;  // the fewest that give an interval to stop on
inline constexpr int64_t kVersusMaxPairs = 50;
inline constexpr double kVersusDefaultMinChange = 0.01;
inline constexpr double kVersusMaxMinChange = 0.5;
// The half-width of the ratio's interval pairs stop at when the sweep names no precision.
inline constexpr double kVersusDefaultPrecision = 0.01;

struct VersusSpec {
  // A matrix axis ("torch", "dtype", ...), "slowdown", or a model's argument
  // ("models.mlp.layers", "models.torchscript.sha256").
  std::string axis;
  nlohmann::json a, b;  // the two values, side A's first
  // "auto" (the default: in_process where both sides can share a process, else
  // interleaved), "interleaved", "duet" or "in_process".
  std::string pairing = "auto";
  int64_t max_pairs = kVersusDefaultMaxPairs;
  double min_change = kVersusDefaultMinChange;
  double precision = kVersusDefaultPrecision;  // the sweep's `precision`, else this
  nlohmann::json ToJson() const;               // {"axis", "a_value", "b_value", "pairing", ...}
};

// Reads the sweep's `versus`: exactly one axis with exactly two values, and its options.
// `document` is the whole sweep: the axis must be one it could have (a matrix axis it
// does not list itself, `slowdown`, or an argument of a model its matrix runs), and
// versus refuses what runs more than one worker process per job (a gang, replicas, a
// batch search) and `processes`, which versus.max_pairs replaces. Errors name the field.
StatusOr<VersusSpec> ParseVersus(const nlohmann::json& document);

// The sides of one combination (`spec`, the job without the versus axis): side A's spec
// and side B's, each with the axis at its value.
struct VersusSides {
  nlohmann::json a, b;
};
VersusSides SidesOf(const VersusSpec& versus, const nlohmann::json& spec);

// How a pair of these sides runs: the versus' pairing, or for "auto" in_process where
// both sides can share one worker process (the axis changes only what that process times,
// not its threads, pools, device or LibTorch) and interleaved otherwise.
std::string ResolvePairing(const VersusSpec& versus);

// True for an axis that changes only what a worker process times (in_process may pair it).
bool PairsInOneProcess(const std::string& axis);

// The CPUs a duet of `threads`-thread sides needs on one agent: one per thread of each.
inline int64_t DuetCpus(int64_t threads) { return 2 * threads; }

}  // namespace benchfleet
