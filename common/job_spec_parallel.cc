// A job across ranks: the `distributed` object of one rank, the `parallel` object of a
// model trained across ranks, and the collectives, which move bytes between ranks rather
// than run a model.

#include <algorithm>
#include <cmath>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr double kMaxDistributedTimeoutS = 86400;

// "HOST:PORT" of the c10d store; HOST is a name or an IPv4 address.
Status ReadEndpoint(const json& value, const std::string& name, std::string* host,
                    std::int64_t* port) {
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  const std::size_t colon = text.rfind(':');
  const std::string port_text = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits =
      !port_text.empty() && port_text.size() <= 5 &&
      std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t number = digits ? std::stoll(port_text) : 0;
  if (colon == std::string::npos || colon == 0 || !digits || number < 1 || number > 65535) {
    return FieldError(
        name, name + " must be \"HOST:PORT\" (the c10d store rank 0 hosts), got " + value.dump());
  }
  *host = text.substr(0, colon);
  *port = number;
  return Status::Ok();
}

// The rules of the collectives.
Status CheckCollective(const JobSpec& spec) {
  if (spec.dtype != "fp32" && spec.dtype != "bf16") {
    return FieldError("dtype", "model " + spec.model + " moves fp32 or bf16 elements; got dtype " +
                                   Quoted(spec.dtype));
  }
  const std::int64_t element = spec.dtype == "fp32" ? 4 : 2;
  if (spec.collective.bytes % element != 0) {
    return FieldError("model_args.bytes",
                      "model_args.bytes (" + std::to_string(spec.collective.bytes) +
                          ") must be a multiple of the dtype's element size (" +
                          std::to_string(element) + " bytes for " + spec.dtype + ")");
  }
  if (spec.mode != "inference") {
    return FieldError("mode", "model " + spec.model +
                                  " times one collective call and has no backward pass: "
                                  "mode must be \"inference\", got " +
                                  Quoted(spec.mode));
  }
  if (spec.batch_size != 1) {
    return FieldError("batch_size",
                      "model " + spec.model +
                          " moves model_args.bytes per call: batch_size must be 1, got " +
                          std::to_string(spec.batch_size));
  }
  if (spec.device != "cpu") {
    return FieldError("device", "model " + spec.model +
                                    " runs on the CPU with Gloo (NCCL for GPUs is not built); got "
                                    "device " +
                                    Quoted(spec.device));
  }
  return Status::Ok();
}

// The ranks of a job of several processes, given either way (a sweep's parallel world
// size, a rank's distributed object), and agreeing when given both ways.
Status CheckRanks(const JobSpec& spec, bool one_rank) {
  const std::int64_t asked = spec.parallel ? spec.parallel->world_size : 0;
  if (spec.distributed && asked != 0 && asked != spec.distributed->world_size) {
    return FieldError(
        spec.parallel->kind == "pipeline" ? "parallel.stages" : "parallel.world_size",
        (spec.parallel->kind == "pipeline" ? "a pipeline runs one stage per rank: parallel.stages ("
                                           : "parallel.world_size (") +
            std::to_string(asked) + ") must equal distributed.world_size (" +
            std::to_string(spec.distributed->world_size) + ")");
  }
  if (one_rank && !spec.distributed) {
    return FieldError(
        "distributed",
        "model " + spec.model +
            " runs across ranks and a worker runs one of them: the "
            "job needs a distributed object (rank, world_size, store, address), which the "
            "agents of a gang add (docs/scheduling.md)");
  }
  if (!spec.distributed && asked == 0) {
    return FieldError("parallel.world_size",
                      "model " + spec.model +
                          " runs across ranks: say how many with "
                          "parallel.world_size (e.g. {\"kind\": \"" +
                          (spec.parallel ? spec.parallel->kind : "collective") +
                          "\", \"world_size\": 2})");
  }
  if (JobWorldSize(spec) < 2) {
    return FieldError("distributed.world_size",
                      "model " + spec.model + " needs at least 2 ranks, got world_size 1");
  }
  return Status::Ok();
}

// A model trained across ranks: each rank its shard of the global batch.
Status CheckParallel(const JobSpec& spec) {
  // Each rank trains its shard; the check against one process on the whole batch holds
  // where a sample's gradient does not depend on the rest of its batch, or (cnn) where
  // what does, BatchNorm, takes its statistics from the whole global batch. A pipeline
  // splits a stack of layers.
  const bool data = spec.parallel->kind == "data";
  const bool layer_stack = spec.model == "mlp" || spec.model == "transformer";
  if (!layer_stack && !(data && spec.model == "cnn")) {
    const std::string why =
        spec.model == "cnn" ? "a pipeline splits a stack of layers (mlp, transformer); cnn runs "
                              "data-parallel only"
        : spec.model == "matmul" ? "its parameter has the batch dimension"
                                 : "a TorchScript module's layers are unknown";
    return FieldError("model", std::string("parallel ") +
                                   (data ? "data runs mlp, cnn or transformer"
                                         : "pipeline runs mlp or transformer") +
                                   "; model " + spec.model + ": " + why);
  }
  if (data && spec.mode != "train") {
    return FieldError("mode", "parallel \"data\" averages gradients: mode must be \"train\", got " +
                                  Quoted(spec.mode));
  }
  if (spec.dtype != "fp32") {
    return FieldError(
        "dtype",
        "parallel is checked against one process within an fp32 tolerance: dtype must be "
        "\"fp32\", got " +
            Quoted(spec.dtype));
  }
  const bool in_process = spec.parallel->in_process;
  if (in_process && spec.device != "cuda") {
    return FieldError(
        "device", "an in-process pipeline puts stage s on cuda:s: device must be \"cuda\", got " +
                      Quoted(spec.device));
  }
  if (!in_process && spec.device != "cpu") {
    return FieldError("device",
                      "parallel runs on the CPU with Gloo (NCCL for GPUs is not built; a pipeline "
                      "across the GPUs of one worker is parallel.in_process); got device " +
                          Quoted(spec.device));
  }
  if (data) {
    if (spec.batch_size % JobWorldSize(spec) != 0) {
      return FieldError("batch_size",
                        "batch_size " + std::to_string(spec.batch_size) +
                            " is the global batch: it must split evenly over world_size " +
                            std::to_string(JobWorldSize(spec)) + " ranks");
    }
    return Status::Ok();
  }
  const ParallelSpec& p = *spec.parallel;
  const std::int64_t units = spec.model == "mlp"
                                 ? static_cast<std::int64_t>(spec.mlp.layers.size()) - 1
                                 : spec.transformer.layers;
  if (units < p.stages) {
    return FieldError("parallel.stages", "model " + spec.model + " has " + std::to_string(units) +
                                             " layers to split, fewer than parallel.stages (" +
                                             std::to_string(p.stages) + ")");
  }
  if (in_process && p.schedule != "gpipe") {
    return FieldError("parallel.schedule",
                      "an in-process pipeline runs GPipe (the GPUs overlap the micro-batches by "
                      "themselves); got " +
                          Quoted(p.schedule));
  }
  if (p.micro_batches > spec.batch_size || spec.batch_size % p.micro_batches != 0) {
    return FieldError("parallel.micro_batches",
                      "parallel.micro_batches (" + std::to_string(p.micro_batches) +
                          ") must divide batch_size (" + std::to_string(spec.batch_size) + ")");
  }
  return Status::Ok();
}

// parallel of kind "pipeline": its stages are its ranks, unless in_process.
Status ReadPipeline(const json& value, ParallelSpec* out) {
  if (!value.contains("stages")) return FieldError("parallel.stages", "missing parallel.stages");
  ASSIGN_OR_RETURN(out->stages, ReadInt(value.at("stages"), "parallel.stages", 2, kMaxWorldSize));
  if (value.contains("micro_batches")) {
    ASSIGN_OR_RETURN(out->micro_batches,
                     ReadInt(value.at("micro_batches"), "parallel.micro_batches", 1, kNoLimit));
  }
  if (value.contains("schedule")) {
    StatusOr<std::string> schedule = ReadChoice(value, "schedule", {"gpipe", "1f1b"});
    // ReadChoice names the key alone ("schedule: ..."); the field is parallel's.
    if (!schedule.ok()) return InvalidArgument("parallel." + schedule.status().message());
    out->schedule = std::move(schedule).value();
  }
  if (value.contains("in_process")) {
    ASSIGN_OR_RETURN(out->in_process, ReadBool(value.at("in_process"), "parallel.in_process"));
  }
  // In one process the stages are devices, not ranks.
  out->world_size = out->in_process ? 0 : out->stages;
  return Status::Ok();
}

}  // namespace

StatusOr<DistributedSpec> ReadDistributed(const json& value) {
  if (!value.is_object()) {
    return FieldError("distributed", "distributed must be an object, got " + value.dump());
  }
  for (const auto& item : value.items()) {
    const std::string& k = item.key();
    if (k != "rank" && k != "world_size" && k != "store" && k != "address" && k != "timeout_s") {
      return FieldError(
          "distributed." + k,
          "unknown key " + Quoted(k) +
              " in distributed; known keys: rank, world_size, store, address, timeout_s");
    }
  }
  for (const char* key : {"rank", "world_size", "store", "address"}) {
    if (!value.contains(key)) {
      return FieldError(std::string("distributed.") + key,
                        std::string("missing distributed.") + key);
    }
  }
  DistributedSpec out;
  ASSIGN_OR_RETURN(out.world_size,
                   ReadInt(value.at("world_size"), "distributed.world_size", 1, kMaxWorldSize));
  ASSIGN_OR_RETURN(out.rank, ReadInt(value.at("rank"), "distributed.rank", 0, out.world_size - 1));
  RETURN_IF_ERROR(
      ReadEndpoint(value.at("store"), "distributed.store", &out.store_host, &out.store_port));
  const json& address = value.at("address");
  if (!address.is_string() || address.get<std::string>().empty()) {
    return FieldError("distributed.address",
                      "distributed.address must be the address this rank's connections use (e.g. "
                      "\"10.0.0.2\"), got " +
                          address.dump());
  }
  out.address = address.get<std::string>();
  if (value.contains("timeout_s")) {
    const json& timeout = value.at("timeout_s");
    if (!timeout.is_number() || !std::isfinite(timeout.get<double>()) ||
        timeout.get<double>() <= 0 || timeout.get<double>() > kMaxDistributedTimeoutS) {
      return FieldError("distributed.timeout_s",
                        "distributed.timeout_s must be a number of seconds in (0, " +
                            std::to_string(static_cast<int>(kMaxDistributedTimeoutS)) + "], got " +
                            timeout.dump());
    }
    out.timeout_s = timeout.get<double>();
  }
  return out;
}

StatusOr<ParallelSpec> ReadParallel(const json& value) {
  if (!value.is_object()) {
    return FieldError("parallel", "parallel must be an object, got " + value.dump());
  }
  ParallelSpec out;
  StatusOr<std::string> kind = ReadChoice(value, "kind", {"data", "pipeline", "collective"});
  // ReadChoice names the key alone ("kind: ..."); the field is parallel's.
  if (!kind.ok()) return InvalidArgument("parallel." + kind.status().message());
  out.kind = std::move(kind).value();
  const std::vector<std::string> keys =
      out.kind == "data" ? std::vector<std::string>{"kind", "world_size", "bucket_mb", "overlap"}
      : out.kind == "pipeline"
          ? std::vector<std::string>{"kind", "stages", "micro_batches", "schedule", "in_process"}
          : std::vector<std::string>{"kind", "world_size"};
  for (const auto& item : value.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      return FieldError("parallel." + item.key(), "unknown key " + Quoted(item.key()) +
                                                      " in parallel of kind " + Quoted(out.kind) +
                                                      "; known keys: " + Join(keys));
    }
  }
  if (out.kind == "pipeline") {
    RETURN_IF_ERROR(ReadPipeline(value, &out));
    return out;
  }
  if (value.contains("world_size")) {
    ASSIGN_OR_RETURN(out.world_size,
                     ReadInt(value.at("world_size"), "parallel.world_size", 2, kMaxWorldSize));
  }
  if (value.contains("overlap")) {
    ASSIGN_OR_RETURN(out.overlap, ReadBool(value.at("overlap"), "parallel.overlap"));
  }
  if (value.contains("bucket_mb")) {
    const json& mb = value.at("bucket_mb");
    if (!mb.is_number() || !std::isfinite(mb.get<double>()) || mb.get<double>() <= 0 ||
        mb.get<double>() > 4096) {
      return FieldError(
          "parallel.bucket_mb",
          "parallel.bucket_mb must be a number of MiB in (0, 4096], got " + mb.dump());
    }
    out.bucket_mb = mb.get<double>();
  }
  return out;
}

Status CheckAcrossRanks(const JobSpec& spec, bool one_rank) {
  const bool collective_kind = spec.parallel && spec.parallel->kind == "collective";
  if (IsCollectiveModel(spec.model)) {
    if (spec.parallel && !collective_kind) {
      return FieldError("parallel.kind", "model " + spec.model +
                                             " is a collective, not a model to train in parallel: "
                                             "parallel.kind must be \"collective\"");
    }
    RETURN_IF_ERROR(CheckCollective(spec));
    return CheckRanks(spec, one_rank);
  }
  if (collective_kind) {
    return FieldError("parallel.kind",
                      "parallel.kind \"collective\" is for the models allreduce, broadcast and "
                      "allgather; model " +
                          spec.model + " trains with \"data\" or \"pipeline\"");
  }
  if (spec.parallel && spec.parallel->in_process) {
    if (spec.distributed) {
      return FieldError(
          "distributed",
          "an in-process pipeline (parallel.in_process) runs every stage in one worker: "
          "it takes no distributed object");
    }
    return CheckParallel(spec);
  }
  if (spec.parallel) {
    RETURN_IF_ERROR(CheckRanks(spec, one_rank));
    return CheckParallel(spec);
  }
  // distributed without parallel, in a job of one model.
  return FieldError(
      "distributed",
      "distributed is for the collectives (allreduce, broadcast, allgather) and parallel "
      "jobs; model " +
          spec.model + " runs in one process here");
}

std::int64_t JobWorldSize(const JobSpec& spec) {
  if (spec.distributed) return spec.distributed->world_size;
  if (spec.parallel && spec.parallel->world_size > 0) return spec.parallel->world_size;
  return 1;
}

}  // namespace benchfleet
