#include "common/worker_result.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/job_spec.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/result_fields.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Samples beyond this many are refused: a result of a long run stays well below it.
constexpr size_t kMaxSamples = 1000000;
// The store keeps samples as float32 (docs/results.md, Raw samples): a larger one would
// be stored as infinity. No real iteration comes near (1e30 ms is 3e19 years).
constexpr double kMaxSampleMs = 1e30;

// Each dtype with a GEMM peak on a GPU, and the figure of the GPU's calibration that
// holds it (docs/calibration.md, GPUs).
constexpr std::pair<const char*, const char*> kGpuPeakFields[] = {
    {"fp32", "sgemm_gflops"}, {"tf32", "tf32_gflops"}, {"bf16", "bf16_gflops"}};

Status ParseCalibration(const json& result, WorkerResult* out) {
  auto it = result.find("calibration");
  if (it == result.end() || !it->is_object()) {
    return InvalidArgument("result.calibration: a calibration result must carry an object");
  }
  RETURN_IF_ERROR(CheckFields(CalibrationFields(), *it, "result.calibration", false));
  for (const ResultField& field : CalibrationFields()) {
    const json* value = FindPath(*it, field.path);
    out->calibration_values.push_back(value ? *value : json());
  }
  if (const json* gpus = FindPath(*it, "gpus")) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      const json& gpu = (*gpus)[i];
      const std::string where = "result.calibration.gpus[" + std::to_string(i) + "]";
      if (!gpu.is_object()) return InvalidArgument(where + ": must be an object");
      for (const auto& dtype_and_field : kGpuPeakFields) {
        const std::string field = dtype_and_field.second;
        auto peak = gpu.find(field);
        if (peak != gpu.end() && !peak->is_null() &&
            !(peak->is_number() && peak->get<double>() >= 0)) {
          return InvalidArgument(where + "." + field + ": must be a number >= 0 or null");
        }
      }
      auto peak = gpu.find("sgemm_gflops");
      out->gpu_sgemm_gflops.push_back(peak == gpu.end() || peak->is_null()
                                          ? std::nullopt
                                          : std::optional<double>(peak->get<double>()));
    }
  }
  out->calibration = *it;
  return Status::Ok();
}

// A gang's per-rank entries: each an object holding what a rank's result holds, its
// rank unique and within the gang.
Status ParseRanks(const json& ranks, WorkerResult* out) {
  if (ranks.size() > static_cast<size_t>(kMaxWorldSize)) {
    return InvalidArgument("result.ranks: more than " + std::to_string(kMaxWorldSize) + " ranks");
  }
  std::set<int64_t> seen;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string where = "result.ranks[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(WorkerResult::Rank rank, ParseRankEntry(ranks[i], where));
    if (rank.rank >= static_cast<int64_t>(ranks.size()) || !seen.insert(rank.rank).second) {
      return InvalidArgument(where + ".distributed.rank: " + std::to_string(rank.rank) +
                             " is repeated or beyond the " + std::to_string(ranks.size()) +
                             " ranks");
    }
    out->ranks.push_back(std::move(rank));
  }
  return Status::Ok();
}

// `versus`: {"pairing", "first", "b": side B's result, "groups"} (in_process also tells
// the groups of blocks it timed).
Status ParsePair(const json& versus, WorkerResult* out) {
  if (!versus.is_object()) return InvalidArgument("result.versus: must be an object");
  WorkerResult::Pair pair;
  const json pairing = versus.value("pairing", json());
  const std::vector<std::string>& known = KnownPairings();
  if (!pairing.is_string() ||
      std::find(known.begin(), known.end(), pairing.get<std::string>()) == known.end()) {
    return InvalidArgument(
        "result.versus.pairing: must be \"interleaved\", \"duet\" or "
        "\"in_process\"");
  }
  pair.pairing = pairing.get<std::string>();
  const json first = versus.value("first", json());
  if (first != "a" && first != "b") {
    return InvalidArgument("result.versus.first: must be \"a\" or \"b\"");
  }
  pair.first = first.get<std::string>();
  if (const json* groups = FindPath(versus, "groups");
      groups && !(groups->is_number_integer() && groups->get<int64_t>() >= 0)) {
    return InvalidArgument("result.versus.groups: must be an integer >= 0");
  }
  const json* b = FindPath(versus, "b");
  if (b == nullptr || !b->is_object()) {
    return InvalidArgument("result.versus.b: must be side B's result, an object");
  }
  if (b->contains("versus")) return InvalidArgument("result.versus.b.versus: side B has no pair");
  StatusOr<WorkerResult> parsed = ParseWorkerResult(*b);
  if (!parsed.ok()) {
    std::string message = parsed.status().message();
    if (message.rfind("result", 0) == 0) message = "result.versus.b" + message.substr(6);
    return InvalidArgument(message);
  }
  pair.b = std::make_shared<WorkerResult>(std::move(parsed).value());
  pair.b_sent = *b;
  out->versus = std::move(pair);
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& KnownPairings() {
  static const std::vector<std::string> pairings = {"interleaved", "duet", "in_process"};
  return pairings;
}

const char* GpuPeakField(const std::string& dtype) {
  for (const auto& [name, field] : kGpuPeakFields) {
    if (dtype == name) return field;
  }
  return nullptr;
}

StatusOr<WorkerResult> ParseWorkerResult(const json& result) {
  if (!result.is_object()) return InvalidArgument("result: must be an object");
  WorkerResult out;
  ASSIGN_OR_RETURN(out.ok, ReadFlag(result, "result", "ok"));
  ASSIGN_OR_RETURN(out.job_id, ReadOptionalInteger(result, "result", "job_id", kAtLeastOne));
  ASSIGN_OR_RETURN(out.attempt, ReadOptionalInteger(result, "result", "attempt", kAtLeastOne));
  std::optional<std::string> kind, error;
  ASSIGN_OR_RETURN(kind, ReadOptionalText(result, "result", "kind", kMaxMessageBytes));
  if (kind && *kind != "calibration" && *kind != "benchmark") {
    return InvalidArgument("result.kind: must be \"benchmark\" or \"calibration\"");
  }
  out.calibration_kind = kind && *kind == "calibration";
  ASSIGN_OR_RETURN(error, ReadOptionalText(result, "result", "error", kMaxMessageBytes));
  if (!out.ok) {
    if (!error || error->empty()) {
      return InvalidArgument("result.error: a failed result must say why (a non-empty string)");
    }
    out.error = *error;
  }
  ResultEcho& echo = out.echo;
  ASSIGN_OR_RETURN(echo.device, ReadOptionalText(result, "result", "device", kMaxMessageBytes));
  ASSIGN_OR_RETURN(echo.model, ReadOptionalText(result, "result", "model", kMaxMessageBytes));
  ASSIGN_OR_RETURN(echo.mode, ReadOptionalText(result, "result", "mode", kMaxMessageBytes));
  ASSIGN_OR_RETURN(echo.dtype, ReadOptionalText(result, "result", "dtype", kMaxMessageBytes));
  ASSIGN_OR_RETURN(echo.batch_size,
                   ReadOptionalInteger(result, "result", "batch_size", kAtLeastOne));
  ASSIGN_OR_RETURN(echo.threads, ReadOptionalInteger(result, "result", "threads", kAtLeastOne));
  ASSIGN_OR_RETURN(echo.interop_threads,
                   ReadOptionalInteger(result, "result", "interop_threads", kAtLeastOne));

  // A successful benchmark must carry its statistics; a failure carries what it has.
  const bool benchmark = out.ok && !out.calibration_kind;
  RETURN_IF_ERROR(CheckFields(ResultFields(), result, "result", benchmark));
  for (const ResultField& field : ResultFields()) {
    const json* value = FindPath(result, field.path);
    out.values.push_back(value ? *value : json());
  }
  if (const json* samples = FindPath(result, "samples_ms")) {
    if (samples->size() > kMaxSamples) {
      return InvalidArgument("result.samples_ms: more than " + std::to_string(kMaxSamples) +
                             " samples");
    }
    for (size_t i = 0; i < samples->size(); ++i) {
      const json& sample = (*samples)[i];
      if (!sample.is_number() || !(sample.get<double>() >= 0) ||
          sample.get<double>() > kMaxSampleMs) {
        return InvalidArgument("result.samples_ms[" + std::to_string(i) +
                               "]: must be a number of milliseconds from 0 to 1e30");
      }
      out.samples_ms.push_back(sample.get<double>());
    }
  }
  if (out.ok && out.calibration_kind) RETURN_IF_ERROR(ParseCalibration(result, &out));
  if (const json* ranks = FindPath(result, "ranks")) RETURN_IF_ERROR(ParseRanks(*ranks, &out));
  if (const json* ops = FindPath(result, "op_profile"); ops && !ops->is_null()) {
    ASSIGN_OR_RETURN(out.op_profile, ParseOpProfile(*ops, "result.op_profile"));
  }
  if (const json* versus = FindPath(result, "versus"); versus && !versus->is_null())
    RETURN_IF_ERROR(ParsePair(*versus, &out));
  out.detail = result;
  out.detail.erase("samples_ms");
  out.detail.erase("ranks");                        // kept per rank, in result_ranks
  out.detail.erase("op_profile");                   // kept per operator, in op_profile
  if (out.versus) out.detail["versus"].erase("b");  // kept with side B's job
  return out;
}

StatusOr<WorkerResult::Rank> ParseRankEntry(const json& entry, const std::string& where) {
  if (!entry.is_object()) return InvalidArgument(where + ": must be an object");
  RETURN_IF_ERROR(CheckFields(ResultFields(), entry, where, false));
  RETURN_IF_ERROR(CheckFields(RankFields(), entry, where, true));
  WorkerResult::Rank rank;
  for (const ResultField& field : RankFields()) {
    const json* value = FindPath(entry, field.path);
    rank.values.push_back(value ? *value : json());
  }
  rank.rank = FindPath(entry, "distributed.rank")->get<int64_t>();
  rank.detail = entry;
  rank.detail.erase("samples_ms");
  rank.detail.erase("ranks");
  return rank;
}

const json& ResultValue(const WorkerResult& result, const std::string& column) {
  static const json kNull;
  const auto& fields = ResultFields();
  for (size_t i = 0; i < fields.size() && i < result.values.size(); ++i) {
    if (fields[i].column == column) return result.values[i];
  }
  return kNull;
}

}  // namespace benchfleet
