// A result as an agent reports it (schemas/protocol.md "result", schemas/worker.md),
// parsed once at the coordinator's edge. Every declared field is type- and range-checked
// (common/result_fields.h); nothing past this point reads the raw JSON.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/op_profile.h"
#include "common/status.h"

namespace benchfleet {

// The job configuration a worker echoes in its result. The coordinator stores its own
// (from the job it handed out) and refuses a result whose echo differs.
struct ResultEcho {
  std::optional<std::string> device, model, mode, dtype;
  std::optional<int64_t> batch_size, threads, interop_threads;
};

struct WorkerResult {
  bool ok = false;
  std::string error;               // why the job failed (ok = false)
  bool calibration_kind = false;   // "kind": "calibration"
  std::optional<int64_t> job_id;   // the inner echo of the envelope's job_id ...
  std::optional<int64_t> attempt;  // ... and attempt, when present
  ResultEcho echo;
  // One value per ResultFields() entry, in its order; null when absent.
  std::vector<nlohmann::json> values;
  std::vector<double> samples_ms;
  // A calibration's output: one value per CalibrationFields() entry, and the GPUs'
  // fp32 peaks (sgemm_gflops per device index; null where not measured). Each GPU's
  // GpuPeakField() figures are checked to be numbers >= 0 or absent.
  std::vector<nlohmann::json> calibration_values;
  std::vector<std::optional<double>> gpu_sgemm_gflops;
  nlohmann::json calibration;  // the whole calibration object, kept as detail
  // A gang's ranks (`ranks`), each checked as a result and by RankFields(): one value
  // per RankFields() entry, and the entry itself, kept as detail.
  struct Rank {
    int64_t rank = 0;
    int64_t host_id = 0;  // the host that ran it; 0: the result's (a gang on one agent)
    std::vector<nlohmann::json> values;
    nlohmann::json detail;
  };
  std::vector<Rank> ranks;
  // A profiled job's top operators (`op_profile`, common/op_profile.h): the op_profile
  // table, not detail.
  std::vector<OpProfileRow> op_profile;
  // Side A's result of a pair (`versus`, schemas/protocol.md, result): how the pair ran
  // and side B's own result, parsed as any result is (and kept with side B's job, not in
  // side A's detail).
  struct Pair {
    std::string pairing;  // KnownPairings()
    std::string first;    // "a" or "b"
    std::shared_ptr<WorkerResult> b;
    nlohmann::json b_sent;  // side B's result as sent, its samples with it
  };
  std::optional<Pair> versus;
  nlohmann::json detail;  // the result minus samples_ms, kept as detail
};

// How the two sides of a pair run (schemas/sweep.md, Versus): "interleaved", "duet",
// "in_process".
const std::vector<std::string>& KnownPairings();

// The GEMM peak of a GPU's calibration (benchfleet-gpu-calibrate's gpus[i],
// docs/calibration.md) that a result of `dtype` on that GPU is read against:
// "sgemm_gflops" for fp32, "tf32_gflops" for tf32, "bf16_gflops" for bf16; nullptr for
// a dtype without a GEMM peak (int8).
const char* GpuPeakField(const std::string& dtype);

// Parses `result` (the "result" field of a result message). Errors name the field:
// "result.ok: must be a boolean, got 1". A successful benchmark result must carry every
// required statistic; a failed one must say why (error).
StatusOr<WorkerResult> ParseWorkerResult(const nlohmann::json& result);

// One rank's entry of a gang's result (`ranks[i]`, or a rank's whole result when the
// coordinator assembles a gang spread over agents), checked against ResultFields() and
// RankFields(); `where` prefixes errors.
StatusOr<WorkerResult::Rank> ParseRankEntry(const nlohmann::json& entry, const std::string& where);

// The value of the result field stored in `column`, or null.
const nlohmann::json& ResultValue(const WorkerResult& result, const std::string& column);

}  // namespace benchfleet
