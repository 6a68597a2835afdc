// A host's fingerprint and a result's series (docs/regressions.md). The fingerprint is
// a SHA-256 of the stable facts of a host (its parts, kept beside it); a series is one
// job configuration on one fingerprint, so an upgraded driver or LibTorch starts a new
// series instead of looking like a regression.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/capabilities.h"
#include "common/sha256.h"

namespace benchfleet {

struct HostFingerprint {
  std::string sha256;    // hex
  nlohmann::json parts;  // what was hashed, as an object
};

// From what the agent registered: CPU model, logical CPUs, memory (whole GiB), GPU
// models and count, NVIDIA driver, CUDA, LibTorch, BLAS and its configuration,
// benchfleet's version. A fact the agent did not send is null. Never the clock speed.
HostFingerprint FingerprintOf(const Capabilities& capabilities);
// The same for the agent's worker `worker` (one of capabilities.Workers()): a job run on
// an agent's second LibTorch is of a series of its own, as on another host.
HostFingerprint FingerprintOf(const Capabilities& capabilities, const TorchFacts& worker);

// The series of a job's result on a host of `fingerprint`: a SHA-256 of the fingerprint
// and the job's spec as canonical JSON (keys sorted).
std::string SeriesOf(const std::string& fingerprint, const nlohmann::json& job_spec);

// The integer a series is indexed by (results.series_key, the baseline): the first 60
// bits of its SHA-256, so an index entry is a quarter the size of the hex text. Two
// series may share a key; lookups compare the series too. None for a malformed series
// (stored as NULL: it is found by no lookup).
std::optional<int64_t> SeriesKeyOf(const std::string& series);

}  // namespace benchfleet
