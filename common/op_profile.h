// The operators a profiled job reports (`profile: true`; schemas/worker.md, op_profile):
// the worker's top operators by self time over one block of iterations, and their
// parse at the coordinator's edge into typed rows with limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// Operators a result reports at most: the top ones by self time.
inline constexpr size_t kOpProfileRows = 20;
// An operator's name is cut to this many bytes (the longest LibTorch names, autograd's
// "autograd::engine::evaluate_function: ..." wrappers, stay well below).
inline constexpr size_t kMaxOpNameBytes = 256;
// input_shapes: at most this many inputs, each of at most kMaxShapeDims dimensions.
inline constexpr size_t kMaxOpInputs = 64;
inline constexpr size_t kMaxShapeDims = 16;

struct OpProfileRow {
  std::string op;       // the operator's name, e.g. "aten::addmm"
  int64_t calls = 0;    // calls in the profiled block
  double self_us = 0;   // time in the operator itself, its callees' excluded, µs
  double total_us = 0;  // time in the operator and everything it called, µs
  // Its inputs' shapes (a scalar or a non-tensor argument is []) in the calls that took
  // the most self time, as JSON text: [[8,64],[64,64]].
  std::string input_shapes;
};

// Parses a result's `op_profile` (`where` prefixes errors: "result.op_profile[3].calls:
// must be an integer >= 1"): an array of at most kOpProfileRows objects {op, calls,
// self_us, total_us, input_shapes}, op a non-empty string of at most kMaxOpNameBytes and
// unique, calls >= 1, the times finite and >= 0 with self_us <= total_us, input_shapes
// an array of shapes within the limits above.
StatusOr<std::vector<OpProfileRow>> ParseOpProfile(const nlohmann::json& value,
                                                   const std::string& where);

}  // namespace benchfleet
