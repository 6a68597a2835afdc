#include "common/job_spec.h"

#include "common/thread_placement.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "common/limits.h"
#include "common/sha256.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
constexpr const char* kKnownDevices = "cpu, cuda, cuda:N";
constexpr double kMaxDistributedTimeoutS = 86400;

std::string Quoted(const std::string& s) { return json(s).dump(); }

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool Fail(JobSpecError* error, std::string field, std::string message) {
  *error = {std::move(field), std::move(message)};
  return false;
}

// Reads an integer in [min, max] from `value`, describing it as `name` in errors.
bool ReadInt(const json& value, const std::string& name, std::int64_t min, std::int64_t max,
             std::int64_t* out, JobSpecError* error) {
  bool ok = false;
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    ok = v <= static_cast<std::uint64_t>(max) && static_cast<std::int64_t>(v) >= min;
    if (ok) *out = static_cast<std::int64_t>(v);
  } else if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    ok = v >= min && v <= max;
    if (ok) *out = v;
  }
  if (ok) return true;
  const std::string range =
      max == kNoLimit ? "an integer >= " + std::to_string(min)
                      : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return Fail(error, name, name + " must be " + range + ", got " + value.dump());
}

bool ReadRequiredInt(const json& job, const char* key, std::int64_t min, std::int64_t max,
                     std::int64_t* out, JobSpecError* error) {
  if (!job.contains(key)) return Fail(error, key, std::string("missing ") + key);
  return ReadInt(job.at(key), key, min, max, out, error);
}

// Reads a string field and checks it against `accepted`; an empty list accepts any.
bool ReadChoice(const json& job, const char* key, const std::vector<std::string>& accepted,
                std::string* out, JobSpecError* error) {
  const std::string plural = std::string(key) + "s";
  const std::string known = accepted.empty() ? kKnownDevices : Join(accepted);
  if (!job.contains(key)) {
    return Fail(error, key, std::string("missing ") + key + "; known " + plural + ": " + known);
  }
  const json& value = job.at(key);
  if (!value.is_string()) {
    return Fail(error, key, std::string(key) + " must be a string, got " + value.dump());
  }
  *out = value.get<std::string>();
  if (!accepted.empty() && std::find(accepted.begin(), accepted.end(), *out) == accepted.end()) {
    return Fail(
        error, key,
        "unknown " + std::string(key) + " " + Quoted(*out) + "; known " + plural + ": " + known);
  }
  return true;
}

// An array of integers in [min, kMaxModelDimension] named `name` (e.g. model_args.layers).
bool ReadDims(const json& value, const std::string& name, std::size_t min_size, std::int64_t min,
              const std::string& example, std::vector<std::int64_t>* out, JobSpecError* error) {
  if (!value.is_array() || value.size() < min_size) {
    return Fail(error, name,
                name + " must be an array of at least " + std::to_string(min_size) +
                    " integers (e.g. " + example + "), got " + value.dump());
  }
  out->clear();
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::int64_t v = 0;
    if (!ReadInt(value[i], name + "[" + std::to_string(i) + "]", min, kMaxModelDimension, &v,
                 error)) {
      return false;
    }
    out->push_back(v);
  }
  return true;
}

// model_args of `model`: each key optional (its default applies) unless listed
// otherwise in schemas/worker.md; unknown keys are errors.
// Each built-in model's arguments and how deeply their values nest (ModelArgDepth).
struct ModelArg {
  const char* key;
  int depth;
};
const std::vector<ModelArg>& ArgsOf(const std::string& model) {
  static const std::map<std::string, std::vector<ModelArg>> args = {
      {"matmul", {{"m", 0}, {"k", 0}, {"n", 0}}},
      {"mlp", {{"layers", 1}}},
      {"cnn", {{"width", 0}, {"blocks", 1}, {"image_size", 0}, {"channels", 0}, {"classes", 0}, {"memory_format", 0}}},
      {"transformer", {{"hidden", 0}, {"heads", 0}, {"layers", 0}, {"ffn", 0}, {"seq_len", 0}}},
      {"torchscript", {{"path", 0}, {"sha256", 0}, {"agent_path", 0}, {"inputs", 2}, {"jit", 0}}},
      {"aoti", {{"path", 0}, {"sha256", 0}, {"agent_path", 0}, {"inputs", 2}}},
      {"allreduce", {{"bytes", 0}}},
      {"broadcast", {{"bytes", 0}}},
      {"allgather", {{"bytes", 0}}}};
  static const std::vector<ModelArg> none;
  auto it = args.find(model);
  return it == args.end() ? none : it->second;
}

class ArgsReader {
 public:
  ArgsReader(const json& args, std::string model) : args_(args), model_(std::move(model)) {
    for (const ModelArg& arg : ArgsOf(model_)) keys_.push_back(arg.key);
  }

  bool CheckKeys(JobSpecError* error) const {
    for (const auto& item : args_.items()) {
      if (std::find(keys_.begin(), keys_.end(), item.key()) == keys_.end()) {
        return Fail(error, "model_args." + item.key(),
                    "unknown key " + Quoted(item.key()) + " in model_args; known keys for " +
                        model_ + ": " + Join(keys_));
      }
    }
    return true;
  }

  bool Int(const char* key, std::int64_t* out, JobSpecError* error) const {
    if (!args_.contains(key)) return true;
    return ReadInt(args_.at(key), std::string("model_args.") + key, 1, kMaxModelDimension, out,
                   error);
  }

  const json* Find(const char* key) const { return args_.contains(key) ? &args_.at(key) : nullptr; }

  // A string argument that is one of `accepted`; absent: *out keeps its default.
  bool Choice(const char* key, const std::vector<std::string>& accepted, std::string* out,
              JobSpecError* error) const {
    if (!args_.contains(key)) return true;
    const json& value = args_.at(key);
    if (!value.is_string() || std::find(accepted.begin(), accepted.end(), value.get<std::string>()) == accepted.end()) {
      return Fail(error, std::string("model_args.") + key,
                  std::string("model_args.") + key + " must be one of " + Join(accepted) + ", got " + value.dump());
    }
    *out = value.get<std::string>();
    return true;
  }

 private:
  const json& args_;
  std::string model_;
  std::vector<std::string> keys_;
};

bool ReadModelArgs(const json& args, JobSpec* spec, JobSpecError* error) {
  const std::string& model = spec->model;
  if (model == "matmul") {
    ArgsReader r(args, model);
    return r.CheckKeys(error) && r.Int("m", &spec->matmul.m, error) &&
           r.Int("k", &spec->matmul.k, error) && r.Int("n", &spec->matmul.n, error);
  }
  if (model == "mlp") {
    ArgsReader r(args, model);
    if (!r.CheckKeys(error)) return false;
    const json* layers = r.Find("layers");
    return layers == nullptr || ReadDims(*layers, "model_args.layers", 2, 1, "[1024, 1024, 10]",
                                         &spec->mlp.layers, error);
  }
  if (model == "cnn") {
    CnnArgs& c = spec->cnn;
    ArgsReader r(args, model);
    if (!r.CheckKeys(error) || !r.Int("width", &c.width, error) ||
        !r.Int("image_size", &c.image_size, error) || !r.Int("channels", &c.channels, error) ||
        !r.Int("classes", &c.classes, error) ||
        !r.Choice("memory_format", KnownMemoryFormats(), &c.memory_format, error)) {
      return false;
    }
    const json* blocks = r.Find("blocks");
    if (blocks == nullptr) return true;
    if (!ReadDims(*blocks, "model_args.blocks", 4, 1, "[2, 2, 2, 2]", &c.blocks, error)) {
      return false;
    }
    if (c.blocks.size() != 4) {
      return Fail(error, "model_args.blocks",
                  "model_args.blocks must list the BasicBlocks of exactly 4 stages (e.g. [2, 2, "
                  "2, 2]), got " +
                      blocks->dump());
    }
    return true;
  }
  if (IsCollectiveModel(model)) {
    ArgsReader r(args, model);
    if (!r.CheckKeys(error)) return false;
    const json* bytes = r.Find("bytes");
    return bytes == nullptr || ReadInt(*bytes, "model_args.bytes", 1, kMaxCollectiveBytes,
                                       &spec->collective.bytes, error);
  }
  if (model == "transformer") {
    TransformerArgs& t = spec->transformer;
    ArgsReader r(args, model);
    if (!r.CheckKeys(error) || !r.Int("hidden", &t.hidden, error) ||
        !r.Int("heads", &t.heads, error) || !r.Int("layers", &t.layers, error) ||
        !r.Int("ffn", &t.ffn, error) || !r.Int("seq_len", &t.seq_len, error)) {
      return false;
    }
    if (t.hidden % t.heads != 0) {
      return Fail(error, "model_args.heads",
                  "model_args.hidden (" + std::to_string(t.hidden) +
                      ") must be divisible by model_args.heads (" + std::to_string(t.heads) + ")");
    }
    return true;
  }
  // torchscript and aoti: where the file is and its inputs are required; nothing
  // sensible to default to. The file is named by its content (`sha256`, what a submit
  // uploaded), by a path on the agent's host (`agent_path`, under its --models-dir), or,
  // for the worker, by the path the agent put it at (`path`; in a sweep file, the file on
  // the submitting machine that `benchfleet submit` uploads). Which of them a job may
  // carry where is checked by the coordinator and the agent (common/model_files.h).
  const bool torchscript = model == "torchscript";
  const std::string what = torchscript ? "a TorchScript file (saved with torch.jit.save)"
                                       : "an AOTInductor package (a .pt2 from "
                                         "torch._inductor.aoti_compile_and_package)";
  ArgsReader r(args, model);
  if (!r.CheckKeys(error)) return false;
  auto absolute_path = [&](const char* key, std::string* out) {
    const json* value = r.Find(key);
    if (value == nullptr) return true;
    if (!value->is_string() || value->get<std::string>().empty() || value->get<std::string>().front() != '/' ||
        value->get<std::string>().size() > kMaxModelPathLength) {
      return Fail(error, std::string("model_args.") + key,
                  std::string("model_args.") + key + " must be the absolute path of " + what + ", got " +
                      value->dump());
    }
    *out = value->get<std::string>();
    return true;
  };
  ModelFileArgs& file = spec->file;
  file.path.clear();
  file.agent_path.clear();
  file.sha256.clear();
  if (!absolute_path("path", &file.path) || !absolute_path("agent_path", &file.agent_path)) {
    return false;
  }
  if (const json* sha256 = r.Find("sha256")) {
    if (!sha256->is_string() || !IsSha256Hex(sha256->get<std::string>())) {
      return Fail(error, "model_args.sha256",
                  "model_args.sha256 must be a model's SHA-256 as 64 lowercase hex digits, got " + sha256->dump());
    }
    file.sha256 = sha256->get<std::string>();
  }
  if (file.path.empty() && file.sha256.empty() && file.agent_path.empty()) {
    return Fail(error, "model_args.path",
                "model_args.path must be the path of " + what +
                    " that benchfleet submit uploads, or model_args.sha256 a model already uploaded, or "
                    "model_args.agent_path a file under each agent's --models-dir; got none of them");
  }
  if (!file.sha256.empty() && !file.agent_path.empty()) {
    return Fail(error, "model_args.agent_path",
                "model_args.sha256 and model_args.agent_path name two files; give one of them");
  }
  const json* inputs = r.Find("inputs");
  if (inputs == nullptr || !inputs->is_array() || inputs->empty()) {
    return Fail(error, "model_args.inputs",
                "model_args.inputs must be an array with one shape per forward() argument, "
                "without the batch dimension (e.g. [[3, 224, 224]]), got " +
                    (inputs == nullptr ? std::string("nothing") : inputs->dump()));
  }
  if (torchscript && !r.Choice("jit", KnownJitModes(), &file.jit, error)) return false;
  file.inputs.clear();
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    std::vector<std::int64_t> shape;
    if (!ReadDims((*inputs)[i], "model_args.inputs[" + std::to_string(i) + "]", 0, 1,
                  "[3, 224, 224]", &shape, error)) {
      return false;
    }
    file.inputs.push_back(std::move(shape));
  }
  return true;
}

bool ReadSeconds(const json& timing, const char* key, double* out, JobSpecError* error) {
  if (!timing.contains(key)) return true;  // keep the default
  const json& value = timing.at(key);
  const std::string field = std::string("timing.") + key;
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
    return Fail(error, field, field + " must be a positive number, got " + value.dump());
  }
  *out = value.get<double>();
  return true;
}

// "HOST:PORT" of the c10d store; HOST is a name or an IPv4 address.
bool ReadEndpoint(const json& value, const std::string& name, std::string* host,
                  std::int64_t* port, JobSpecError* error) {
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  const std::size_t colon = text.rfind(':');
  const std::string port_text = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                      std::all_of(port_text.begin(), port_text.end(),
                                  [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t number = digits ? std::stoll(port_text) : 0;
  if (colon == std::string::npos || colon == 0 || !digits || number < 1 || number > 65535) {
    return Fail(error, name,
                name + " must be \"HOST:PORT\" (the c10d store rank 0 hosts), got " + value.dump());
  }
  *host = text.substr(0, colon);
  *port = number;
  return true;
}

bool ReadDistributed(const json& value, DistributedSpec* out, JobSpecError* error) {
  if (!value.is_object()) {
    return Fail(error, "distributed", "distributed must be an object, got " + value.dump());
  }
  for (const auto& item : value.items()) {
    const std::string& k = item.key();
    if (k != "rank" && k != "world_size" && k != "store" && k != "address" && k != "timeout_s") {
      return Fail(error, "distributed." + k,
                  "unknown key " + Quoted(k) +
                      " in distributed; known keys: rank, world_size, store, address, timeout_s");
    }
  }
  for (const char* key : {"rank", "world_size", "store", "address"}) {
    if (!value.contains(key)) {
      return Fail(error, std::string("distributed.") + key, std::string("missing distributed.") + key);
    }
  }
  if (!ReadInt(value.at("world_size"), "distributed.world_size", 1, kMaxWorldSize,
               &out->world_size, error) ||
      !ReadInt(value.at("rank"), "distributed.rank", 0, out->world_size - 1, &out->rank, error) ||
      !ReadEndpoint(value.at("store"), "distributed.store", &out->store_host, &out->store_port,
                    error)) {
    return false;
  }
  const json& address = value.at("address");
  if (!address.is_string() || address.get<std::string>().empty()) {
    return Fail(error, "distributed.address",
                "distributed.address must be the address this rank's connections use (e.g. "
                "\"10.0.0.2\"), got " +
                    address.dump());
  }
  out->address = address.get<std::string>();
  if (value.contains("timeout_s")) {
    const json& timeout = value.at("timeout_s");
    if (!timeout.is_number() || !std::isfinite(timeout.get<double>()) ||
        timeout.get<double>() <= 0 || timeout.get<double>() > kMaxDistributedTimeoutS) {
      return Fail(error, "distributed.timeout_s",
                  "distributed.timeout_s must be a number of seconds in (0, " +
                      std::to_string(static_cast<int>(kMaxDistributedTimeoutS)) + "], got " +
                      timeout.dump());
    }
    out->timeout_s = timeout.get<double>();
  }
  return true;
}

// The rules of the collectives, which move bytes between ranks rather than run a model.
bool CheckCollective(const JobSpec& spec, JobSpecError* error) {
  if (spec.dtype != "fp32" && spec.dtype != "bf16") {
    return Fail(error, "dtype",
                "model " + spec.model + " moves fp32 or bf16 elements; got dtype " + Quoted(spec.dtype));
  }
  const std::int64_t element = spec.dtype == "fp32" ? 4 : 2;
  if (spec.collective.bytes % element != 0) {
    return Fail(error, "model_args.bytes",
                "model_args.bytes (" + std::to_string(spec.collective.bytes) +
                    ") must be a multiple of the dtype's element size (" + std::to_string(element) +
                    " bytes for " + spec.dtype + ")");
  }
  if (spec.mode != "inference") {
    return Fail(error, "mode",
                "model " + spec.model + " times one collective call and has no backward pass: "
                "mode must be \"inference\", got " + Quoted(spec.mode));
  }
  if (spec.batch_size != 1) {
    return Fail(error, "batch_size",
                "model " + spec.model + " moves model_args.bytes per call: batch_size must be 1, got " +
                    std::to_string(spec.batch_size));
  }
  if (spec.device != "cpu") {
    return Fail(error, "device",
                "model " + spec.model + " runs on the CPU with Gloo (NCCL for GPUs is not built); got "
                "device " + Quoted(spec.device));
  }
  return true;
}

bool ReadParallel(const json& value, ParallelSpec* out, JobSpecError* error) {
  if (!value.is_object()) {
    return Fail(error, "parallel", "parallel must be an object, got " + value.dump());
  }
  if (!ReadChoice(value, "kind", {"data", "pipeline", "collective"}, &out->kind, error)) {
    error->field = "parallel." + error->field;
    return false;
  }
  const std::vector<std::string> keys =
      out->kind == "data"       ? std::vector<std::string>{"kind", "world_size", "bucket_mb", "overlap"}
      : out->kind == "pipeline" ? std::vector<std::string>{"kind", "stages", "micro_batches", "schedule", "in_process"}
                                : std::vector<std::string>{"kind", "world_size"};
  for (const auto& item : value.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      return Fail(error, "parallel." + item.key(),
                  "unknown key " + Quoted(item.key()) + " in parallel of kind " + Quoted(out->kind) +
                      "; known keys: " + Join(keys));
    }
  }
  if (out->kind == "pipeline") {
    if (!value.contains("stages")) return Fail(error, "parallel.stages", "missing parallel.stages");
    if (!ReadInt(value.at("stages"), "parallel.stages", 2, kMaxWorldSize, &out->stages, error) ||
        (value.contains("micro_batches") &&
         !ReadInt(value.at("micro_batches"), "parallel.micro_batches", 1, kNoLimit,
                  &out->micro_batches, error)) ||
        (value.contains("schedule") &&
         !ReadChoice(value, "schedule", {"gpipe", "1f1b"}, &out->schedule, error))) {
      if (error->field == "schedule") error->field = "parallel.schedule";
      return false;
    }
    if (value.contains("in_process")) {
      if (!value.at("in_process").is_boolean()) {
        return Fail(error, "parallel.in_process",
                    "parallel.in_process must be true or false, got " + value.at("in_process").dump());
      }
      out->in_process = value.at("in_process").get<bool>();
    }
    // In one process the stages are devices, not ranks.
    out->world_size = out->in_process ? 0 : out->stages;
    return true;
  }
  if (value.contains("world_size") &&
      !ReadInt(value.at("world_size"), "parallel.world_size", 2, kMaxWorldSize, &out->world_size,
               error)) {
    return false;
  }
  if (value.contains("overlap")) {
    if (!value.at("overlap").is_boolean()) {
      return Fail(error, "parallel.overlap",
                  "parallel.overlap must be true or false, got " + value.at("overlap").dump());
    }
    out->overlap = value.at("overlap").get<bool>();
  }
  if (value.contains("bucket_mb")) {
    const json& mb = value.at("bucket_mb");
    if (!mb.is_number() || !std::isfinite(mb.get<double>()) || mb.get<double>() <= 0 ||
        mb.get<double>() > 4096) {
      return Fail(error, "parallel.bucket_mb",
                  "parallel.bucket_mb must be a number of MiB in (0, 4096], got " + mb.dump());
    }
    out->bucket_mb = mb.get<double>();
  }
  return true;
}

// The job's `prune` object (PruneSpec): its kind and the one share that kind takes.
bool ReadPrune(const json& value, PruneSpec* out, JobSpecError* error) {
  if (!value.is_object()) {
    return Fail(error, "prune",
                "prune must be an object (e.g. {\"kind\": \"structured\", \"ratio\": 0.5}) or null, got " +
                    value.dump());
  }
  const json kind = value.value("kind", json(nullptr));
  const std::vector<std::string>& kinds = KnownPruneKinds();
  if (!kind.is_string() || std::find(kinds.begin(), kinds.end(), kind.get<std::string>()) == kinds.end()) {
    return Fail(error, "prune.kind", "prune.kind must be one of " + Join(kinds) + ", got " + kind.dump());
  }
  out->kind = kind.get<std::string>();
  const bool magnitude = out->kind == "magnitude";
  const std::string share = magnitude ? "sparsity" : "ratio";
  for (const auto& item : value.items()) {
    if (item.key() != "kind" && item.key() != share) {
      return Fail(error, "prune." + item.key(),
                  "unknown key " + Quoted(item.key()) + " in prune of kind " + Quoted(out->kind) +
                      "; known keys: kind, " + share);
    }
  }
  const std::string field = "prune." + share;
  const json amount = value.value(share, json(nullptr));
  if (!amount.is_number() || !std::isfinite(amount.get<double>()) || amount.get<double>() < 0 ||
      amount.get<double>() >= 1) {
    return Fail(error, field,
                field + " must be a number in [0, 1), the share of " +
                    (magnitude ? "each layer's weights set to zero" : "the hidden neurons or inner channels removed") +
                    ", got " + (amount.is_null() ? std::string("nothing") : amount.dump()));
  }
  (magnitude ? out->sparsity : out->ratio) = amount.get<double>();
  return true;
}

// The job's `reference` object: {"model": M, "model_args": {...}}, M's arguments checked
// by the rules of a job of M. Errors name reference.<field>.
bool ReadReference(const json& value, const JobSpec& job, ReferenceSpec* out, JobSpecError* error) {
  if (!value.is_object()) {
    return Fail(error, "reference",
                "reference must be an object (e.g. {\"model\": \"torchscript\", \"model_args\": {\"path\": "
                "\"/models/teacher.pt\"}}) or null, got " + value.dump());
  }
  for (const auto& item : value.items()) {
    if (item.key() != "model" && item.key() != "model_args") {
      return Fail(error, "reference." + item.key(),
                  "unknown key " + Quoted(item.key()) + " in reference; known keys: model, model_args");
    }
  }
  auto ref = std::make_shared<JobSpec>();
  const json model = value.value("model", json(nullptr));
  if (!model.is_string() || IsCollectiveModel(model.get<std::string>()) || model == "aoti" ||
      std::find(KnownModels().begin(), KnownModels().end(), model.get<std::string>()) == KnownModels().end()) {
    return Fail(error, "reference.model",
                "reference.model must be one of matmul, mlp, cnn, transformer, torchscript, got " + model.dump());
  }
  ref->model = model.get<std::string>();
  json args = value.value("model_args", json::object());
  if (!args.is_object()) {
    return Fail(error, "reference.model_args", "reference.model_args must be an object, got " + args.dump());
  }
  if (ref->model == "torchscript") {
    if (args.contains("inputs")) {
      return Fail(error, "reference.model_args.inputs",
                  "reference.model_args.inputs: a reference runs on the job's own inputs; leave it out");
    }
    args["inputs"] = json::array({json::array({1})});  // read below, then replaced by the job's
  }
  if (!ReadModelArgs(args, ref.get(), error)) {
    error->field = "reference." + error->field;
    error->message = (error->message.rfind("model_args", 0) == 0 ? "reference." : "reference: ") + error->message;
    return false;
  }
  ref->file.inputs.clear();
  ref->mode = "inference";
  ref->dtype = "fp32";
  ref->device = job.device;
  ref->batch_size = job.batch_size;
  ref->threads = job.threads;
  ref->interop_threads = job.interop_threads;
  ref->onednn = job.onednn;
  ref->seed = job.seed;
  *out = std::move(ref);
  return true;
}

// prune and reference: what each can run with.
bool CheckPruneAndReference(const JobSpec& spec, JobSpecError* error) {
  if (!spec.prune && !spec.reference) return true;
  const char* key = spec.prune ? "prune" : "reference";
  if (spec.prune && spec.reference) {
    return Fail(error, "reference",
                "prune and reference each set what the accuracy is measured against (the unpruned "
                "model, a second model): give one of them");
  }
  if (IsCollectiveModel(spec.model) || spec.parallel) {
    return Fail(error, key,
                std::string(key) + " runs a model in one process; model " + spec.model +
                    (spec.parallel ? " with parallel" : " (a collective)") + " cannot take it");
  }
  if (!spec.prune) return true;
  const bool structured = spec.prune->kind == "structured";
  if (spec.model == "matmul" || IsModelFile(spec.model) || (structured && spec.model == "transformer")) {
    const std::string why =
        spec.model == "matmul" ? "it has no Linear or Conv layers"
        : IsModelFile(spec.model)
            ? "the worker prunes only the layers it builds itself; prune the module before saving it "
              "and judge it against the unpruned one with reference"
            : "structured pruning removes the hidden neurons of an mlp or the inner channels of a cnn's "
              "residual blocks, where the layers around them can shrink to match; use kind \"magnitude\"";
    return Fail(error, "prune.kind",
                "prune of kind " + Quoted(spec.prune->kind) + " cannot prune model " + spec.model + ": " + why);
  }
  if (structured && spec.model == "mlp" && spec.mlp.layers.size() < 3) {
    return Fail(error, "prune.kind",
                "structured pruning removes hidden neurons; model_args.layers " + json(spec.mlp.layers).dump() +
                    " has no hidden layer");
  }
  return true;
}

// The ranks of a job of several processes, given either way (a sweep's parallel world
// size, a rank's distributed object), and agreeing when given both ways. A worker runs
// one rank: it needs the distributed object the agent adds (`one_rank`).
bool CheckRanks(const JobSpec& spec, bool one_rank, JobSpecError* error) {
  const std::int64_t asked = spec.parallel ? spec.parallel->world_size : 0;
  if (spec.distributed && asked != 0 && asked != spec.distributed->world_size) {
    return Fail(error, spec.parallel->kind == "pipeline" ? "parallel.stages" : "parallel.world_size",
                (spec.parallel->kind == "pipeline"
                     ? "a pipeline runs one stage per rank: parallel.stages ("
                     : "parallel.world_size (") +
                    std::to_string(asked) + ") must equal distributed.world_size (" +
                    std::to_string(spec.distributed->world_size) + ")");
  }
  if (one_rank && !spec.distributed) {
    return Fail(error, "distributed",
                "model " + spec.model + " runs across ranks and a worker runs one of them: the "
                "job needs a distributed object (rank, world_size, store, address), which the "
                "agents of a gang add (docs/scheduling.md)");
  }
  if (!spec.distributed && asked == 0) {
    return Fail(error, "parallel.world_size",
                "model " + spec.model + " runs across ranks: say how many with "
                "parallel.world_size (e.g. {\"kind\": \"" + (spec.parallel ? spec.parallel->kind : "collective") +
                    "\", \"world_size\": 2})");
  }
  if (JobWorldSize(spec) < 2) {
    return Fail(error, "distributed.world_size",
                "model " + spec.model + " needs at least 2 ranks, got world_size 1");
  }
  return true;
}

// A model trained across ranks: each rank its shard of the global batch.
bool CheckParallel(const JobSpec& spec, JobSpecError* error) {
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
    return Fail(error, "model",
                std::string("parallel ") + (data ? "data runs mlp, cnn or transformer"
                                                 : "pipeline runs mlp or transformer") +
                    "; model " + spec.model + ": " + why);
  }
  if (data && spec.mode != "train") {
    return Fail(error, "mode",
                "parallel \"data\" averages gradients: mode must be \"train\", got " + Quoted(spec.mode));
  }
  if (spec.dtype != "fp32") {
    return Fail(error, "dtype",
                "parallel is checked against one process within an fp32 tolerance: dtype must be "
                "\"fp32\", got " + Quoted(spec.dtype));
  }
  const bool in_process = spec.parallel->in_process;
  if (in_process && spec.device != "cuda") {
    return Fail(error, "device",
                "an in-process pipeline puts stage s on cuda:s: device must be \"cuda\", got " +
                    Quoted(spec.device));
  }
  if (!in_process && spec.device != "cpu") {
    return Fail(error, "device",
                "parallel runs on the CPU with Gloo (NCCL for GPUs is not built; a pipeline "
                "across the GPUs of one worker is parallel.in_process); got device " +
                    Quoted(spec.device));
  }
  if (data) {
    if (spec.batch_size % JobWorldSize(spec) != 0) {
      return Fail(error, "batch_size",
                  "batch_size " + std::to_string(spec.batch_size) +
                      " is the global batch: it must split evenly over world_size " +
                      std::to_string(JobWorldSize(spec)) + " ranks");
    }
    return true;
  }
  const ParallelSpec& p = *spec.parallel;
  const std::int64_t units = spec.model == "mlp"
                                 ? static_cast<std::int64_t>(spec.mlp.layers.size()) - 1
                                 : spec.transformer.layers;
  if (units < p.stages) {
    return Fail(error, "parallel.stages",
                "model " + spec.model + " has " + std::to_string(units) +
                    " layers to split, fewer than parallel.stages (" + std::to_string(p.stages) + ")");
  }
  if (in_process && p.schedule != "gpipe") {
    return Fail(error, "parallel.schedule",
                "an in-process pipeline runs GPipe (the GPUs overlap the micro-batches by "
                "themselves); got " + Quoted(p.schedule));
  }
  if (p.micro_batches > spec.batch_size || spec.batch_size % p.micro_batches != 0) {
    return Fail(error, "parallel.micro_batches",
                "parallel.micro_batches (" + std::to_string(p.micro_batches) +
                    ") must divide batch_size (" + std::to_string(spec.batch_size) + ")");
  }
  return true;
}

// search: {"max_batch": {"memory_mb": M}}, the only search there is.
bool ReadSearch(const json& value, JobSpec* spec, JobSpecError* error) {
  if (!value.is_object() || value.size() != 1 || !value.contains("max_batch")) {
    return Fail(error, "search",
                "search must be {\"max_batch\": {\"memory_mb\": M}} (the largest batch that runs "
                "within M MiB), got " +
                    value.dump());
  }
  const json& max_batch = value.at("max_batch");
  if (!max_batch.is_object() || max_batch.size() != 1 || !max_batch.contains("memory_mb")) {
    return Fail(error, "search.max_batch",
                "search.max_batch must be {\"memory_mb\": M}, got " + max_batch.dump());
  }
  MaxBatchSearch search;
  if (!ReadInt(max_batch.at("memory_mb"), "search.max_batch.memory_mb", 1, kMaxSearchMemoryMb,
               &search.memory_mb, error)) {
    return false;
  }
  spec->max_batch = search;
  return true;
}

// The agent's `replica` object: {"index": i, "count": P, "barrier": "/dir"}.
bool ReadReplica(const json& value, std::int64_t replicas, ReplicaSpec* out, JobSpecError* error) {
  if (!value.is_object())
    return Fail(error, "replica", "replica must be an object, got " + value.dump());
  for (const auto& item : value.items()) {
    if (item.key() != "index" && item.key() != "count" && item.key() != "barrier") {
      return Fail(
          error, "replica." + item.key(),
          "unknown key " + Quoted(item.key()) + " in replica; known keys: index, count, barrier");
    }
  }
  for (const char* key : {"index", "count", "barrier"}) {
    if (!value.contains(key))
      return Fail(error, std::string("replica.") + key, std::string("missing replica.") + key);
  }
  if (!ReadInt(value.at("count"), "replica.count", replicas, replicas, &out->count, error) ||
      !ReadInt(value.at("index"), "replica.index", 0, out->count - 1, &out->index, error)) {
    return false;
  }
  const json& barrier = value.at("barrier");
  if (!barrier.is_string() || barrier.get<std::string>().empty() ||
      barrier.get<std::string>()[0] != '/') {
    return Fail(error, "replica.barrier",
                "replica.barrier must be the absolute path of a directory the copies share, got " +
                    barrier.dump());
  }
  out->barrier = barrier.get<std::string>();
  return true;
}

// scenario: "offline", "single_stream", or an object {"kind": K, ...} with K's keys
// (ServerScenario). The server's max_batch defaults to the job's batch_size.
bool ReadPositive(const json& value, const std::string& field, double max, double* out,
                  JobSpecError* error) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0 ||
      value.get<double>() > max) {
    return Fail(error, field,
                field + " must be a positive number up to " + json(max).dump() + ", got " +
                    value.dump());
  }
  *out = value.get<double>();
  return true;
}

bool ReadScenario(const json& value, JobSpec* spec, JobSpecError* error) {
  const std::vector<std::string>& kinds = KnownScenarios();
  const json kind = value.is_object() ? value.value("kind", json(nullptr)) : value;
  if (!kind.is_string() || std::find(kinds.begin(), kinds.end(), kind.get<std::string>()) == kinds.end()) {
    return Fail(error, value.is_object() ? "scenario.kind" : "scenario",
                "scenario must be one of " + Join(kinds) +
                    " or an object {\"kind\": \"server\", \"qps\": Q, ...}, got " + value.dump());
  }
  spec->scenario = kind.get<std::string>();
  ServerScenario& s = spec->serving;
  s.max_batch = spec->scenario == "server" ? spec->batch_size : 1;
  if (!value.is_object()) {
    if (spec->scenario == "server") {
      return Fail(error, "scenario.qps",
                  "scenario \"server\" needs an arrival rate: {\"kind\": \"server\", \"qps\": Q}");
    }
    return true;
  }
  const bool server = spec->scenario == "server";
  const bool offline = spec->scenario == "offline";
  const std::string known = server ? "kind, qps, max_batch, max_wait_ms, slo_p99_ms, "
                                     "min_duration_s, min_queries, max_duration_s"
                            : offline ? "kind"
                                      : "kind, min_duration_s, min_queries, max_duration_s";
  for (const auto& item : value.items()) {
    const std::string& k = item.key();
    const std::string field = "scenario." + k;
    const json& v = item.value();
    bool ok = true;
    if (k == "kind") continue;
    if (offline) {
      return Fail(error, field, "unknown key " + Quoted(k) + " in scenario of kind \"offline\" "
                  "(timing sets how long it runs); known keys: kind");
    }
    if (k == "min_duration_s") {
      ok = ReadPositive(v, field, kMaxScenarioSeconds, &s.min_duration_s, error);
    } else if (k == "max_duration_s") {
      ok = ReadPositive(v, field, kMaxScenarioSeconds, &s.max_duration_s, error);
    } else if (k == "min_queries") {
      ok = ReadInt(v, field, 1, std::int64_t{1} << 30, &s.min_queries, error);
    } else if (server && k == "qps") {
      ok = ReadPositive(v, field, kMaxScenarioQps, &s.qps, error);
    } else if (server && k == "max_batch") {
      ok = ReadInt(v, field, 1, kMaxSearchBatch, &s.max_batch, error);
    } else if (server && k == "max_wait_ms") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
          v.get<double>() > 1e6) {
        return Fail(error, field, field + " must be a number of ms in [0, 1e6], got " + v.dump());
      }
      s.max_wait_ms = v.get<double>();
    } else if (server && k == "slo_p99_ms") {
      double slo = 0;
      ok = ReadPositive(v, field, 1e6, &slo, error);
      s.slo_p99_ms = slo;
    } else {
      return Fail(error, field,
                  "unknown key " + Quoted(k) + " in scenario of kind " + Quoted(spec->scenario) +
                      "; known keys: " + known);
    }
    if (!ok) return false;
  }
  if (server && s.qps == 0) {
    return Fail(error, "scenario.qps", "scenario.qps: missing (the arrival rate, queries per second)");
  }
  if (s.min_duration_s > s.max_duration_s) {
    return Fail(error, "scenario.min_duration_s",
                "scenario.min_duration_s (" + json(s.min_duration_s).dump() +
                    ") must not exceed scenario.max_duration_s (" + json(s.max_duration_s).dump() + ")");
  }
  return true;
}

// single_stream and server time queries of one inference process, one batch at a time.
// Repeats in processes are the coordinator's, of a job whose one worker process times
// one model: a gang's ranks, replicas and a batch search combine results of their own.
bool CheckProcesses(const JobSpec& spec, JobSpecError* error) {
  if (spec.processes == 1 && !spec.precision) return true;
  if (RunsInOneProcess(spec)) return true;
  const std::string what = spec.parallel || spec.distributed || IsCollectiveModel(spec.model) ? "a job of several ranks"
                           : spec.replicas != 1                                               ? "a job of several replicas"
                                                                                              : "a batch search";
  return Fail(error, spec.processes != 1 ? "processes" : "precision",
              std::string(spec.processes != 1 ? "processes" : "precision") +
                  " repeats a job of one worker process; " + what + " runs once");
}

// A placement other than the default is of one worker process's threads (a gang's
// ranks and replicas each take their own slice of the agent's CPUs), and smt pairs
// threads on a core: one thread has none to pair.
bool CheckThreadPlacement(const JobSpec& spec, const std::string& placement, JobSpecError* error) {
  if (placement == kDefaultThreadPlacement) return true;
  if (!RunsInOneProcess(spec) || spec.device != "cpu") {
    return Fail(error, "thread_placement",
                "thread_placement " + Quoted(placement) + " places the threads of a CPU job of one worker process; " +
                    (spec.device != "cpu" ? "a GPU job" : "a gang's ranks, replicas and a batch search") +
                    " take the default, \"cores\"");
  }
  if (placement == "smt" && spec.threads < 2) {
    return Fail(error, "thread_placement",
                "thread_placement \"smt\" puts threads on the hardware threads of one core; a job of 1 thread "
                "has none to pair (threads: 2 or more)");
  }
  return true;
}

bool CheckScenario(const JobSpec& spec, JobSpecError* error) {
  if (spec.scenario == "offline") return true;
  const std::string why =
      spec.mode != "inference"                                              ? "mode \"inference\""
      : spec.parallel || spec.distributed || IsCollectiveModel(spec.model)  ? "a job of one process"
      : spec.max_batch                                                      ? "no search"
      : spec.replicas != 1                                                  ? "replicas 1"
      : spec.profile                                                        ? "no profile"
                                                                            : "";
  if (!why.empty()) {
    return Fail(error, "scenario",
                "scenario " + Quoted(spec.scenario) + " serves queries from one inference model; it "
                "needs " + why);
  }
  if (spec.scenario == "single_stream" && spec.batch_size != 1) {
    return Fail(error, "batch_size",
                "scenario \"single_stream\" runs one query at a time: batch_size must be 1, got " +
                    std::to_string(spec.batch_size));
  }
  return true;
}

// A search and replicas are each a way to run one configuration; neither combines with
// a job of several ranks, nor with each other.
bool CheckSearchAndReplicas(const JobSpec& spec, JobSpecError* error) {
  const bool ranks = spec.parallel || spec.distributed || IsCollectiveModel(spec.model);
  if (spec.max_batch && ranks) {
    return Fail(error, "search",
                "search.max_batch probes batches in one process; a job of several ranks (parallel, "
                "the collectives) cannot search");
  }
  if (spec.replicas == 1) return true;
  if (ranks) {
    return Fail(error, "replicas",
                "replicas are independent copies of a job of one process; a job of several ranks "
                "(parallel, the collectives) is one job across processes: set replicas to 1 or "
                "leave parallel out");
  }
  if (spec.max_batch) {
    return Fail(error, "replicas",
                "search.max_batch finds what fits one process; replicas must be 1 with a search");
  }
  if (spec.device != "cpu") {
    return Fail(error, "replicas",
                "replicas run on disjoint CPU sets of one agent: device must be \"cpu\", got " +
                    Quoted(spec.device));
  }
  return true;
}

// Combinations that are each valid alone but cannot run together.
bool CheckCombination(const JobSpec& spec, bool one_rank, JobSpecError* error) {
  if (!CheckSearchAndReplicas(spec, error)) return false;
  const bool collective_kind = spec.parallel && spec.parallel->kind == "collective";
  if (IsCollectiveModel(spec.model)) {
    if (spec.parallel && !collective_kind) {
      return Fail(error, "parallel.kind",
                  "model " + spec.model + " is a collective, not a model to train in parallel: "
                  "parallel.kind must be \"collective\"");
    }
    return CheckCollective(spec, error) && CheckRanks(spec, one_rank, error);
  }
  if (collective_kind) {
    return Fail(error, "parallel.kind",
                "parallel.kind \"collective\" is for the models allreduce, broadcast and "
                "allgather; model " + spec.model + " trains with \"data\" or \"pipeline\"");
  }
  if (spec.parallel && spec.parallel->in_process) {
    if (spec.distributed) {
      return Fail(error, "distributed",
                  "an in-process pipeline (parallel.in_process) runs every stage in one worker: "
                  "it takes no distributed object");
    }
    return CheckParallel(spec, error);
  }
  if (spec.parallel) return CheckRanks(spec, one_rank, error) && CheckParallel(spec, error);
  if (spec.distributed) {
    return Fail(error, "distributed",
                "distributed is for the collectives (allreduce, broadcast, allgather) and parallel "
                "jobs; model " + spec.model + " runs in one process here");
  }
  if (spec.dtype == "tf32" && !IsCudaDevice(spec.device)) {
    return Fail(error, "dtype",
                "dtype \"tf32\" is fp32 with TF32 tensor-core math in cuBLAS and cuDNN, a CUDA "
                "mode; on device " + Quoted(spec.device) + " use \"fp32\"");
  }
  if (spec.dtype != "int8") return true;
  if (spec.mode != "inference") {
    return Fail(error, "dtype",
                "dtype \"int8\" (dynamic quantization) runs in mode \"inference\" only: its "
                "quantized Linear has no backward; got mode " +
                    Quoted(spec.mode));
  }
  if (spec.model == "matmul") {
    return Fail(error, "dtype",
                "int8 dynamic quantization needs Linear layers; model matmul has none");
  }
  if (IsModelFile(spec.model)) {
    return Fail(error, "dtype",
                "int8 dynamic quantization needs Linear layers the worker builds itself; a " +
                    spec.model + " model runs as saved (quantize it before saving and use dtype "
                    "\"fp32\")");
  }
  if (spec.device != "cpu") {
    return Fail(
        error, "dtype",
        "int8 dynamic quantization runs on the CPU only; got device " + Quoted(spec.device));
  }
  return true;
}

// An AOTInductor package, and the zoo models run by another technique than eager: what
// each can run with. Both are inference of one process at the batch compiled for.
bool CheckCompiled(const JobSpec& spec, JobSpecError* error) {
  const bool package = spec.model == "aoti";
  if (!package && spec.technique == "eager") return true;
  const std::string what = package ? "model aoti (an AOTInductor package)"
                                   : "technique " + Quoted(spec.technique);
  if (package && spec.technique != "eager") {
    return Fail(error, "technique",
                "technique " + Quoted(spec.technique) + " compiles a zoo model (matmul, mlp, cnn, "
                "transformer); model aoti is a package compiled already: leave technique out");
  }
  if (!package && spec.model != "matmul" && spec.model != "mlp" && spec.model != "cnn" &&
      spec.model != "transformer") {
    return Fail(error, "technique",
                what + " compiles a zoo model (matmul, mlp, cnn, transformer); model " + spec.model +
                    " runs eager only");
  }
  if (spec.mode != "inference") {
    return Fail(error, package ? "mode" : "technique",
                what + " runs in mode \"inference\" only (a compiled forward pass has no "
                "backward here); got mode " + Quoted(spec.mode));
  }
  if (spec.technique == "cuda_graph" && !IsCudaDevice(spec.device)) {
    return Fail(error, "technique",
                "technique \"cuda_graph\" captures a forward pass's CUDA kernels into a graph: it runs on "
                "device \"cuda\" only; got device " + Quoted(spec.device));
  }
  if (spec.dtype == "int8" && spec.technique != "aoti") {
    return Fail(error, "dtype",
                what + " takes dtype fp32, tf32 or bf16; int8 goes through PT2E into an AOTI "
                "package (technique \"aoti\") or through the eager path (technique \"eager\")");
  }
  const char* other = spec.prune ? "prune"
                      : spec.reference ? "reference"
                      : spec.parallel || spec.distributed ? "parallel"
                      : spec.replicas > 1 ? "replicas"
                      : spec.max_batch ? "search"
                      : spec.scenario != "offline" ? "scenario"
                      : nullptr;
  if (other != nullptr) {
    return Fail(error, other,
                what + " runs one process at the batch it was compiled for: it takes no " +
                    std::string(other));
  }
  return true;
}

// profile and checkpointing: what each needs of the rest of the job.
bool CheckTechniques(const JobSpec& spec, JobSpecError* error) {
  // Each rank would profile its own block, and its collective calls must pair with the
  // other ranks': only a job of one process, one model, is profiled.
  if (spec.profile && (spec.distributed || spec.parallel)) {
    return Fail(error, "profile",
                "profile records the operators of one process's model: a job of several ranks "
                "(collectives, parallel) is not profiled");
  }
  if (!spec.checkpointing) return true;
  if (spec.mode != "train") {
    return Fail(error, "checkpointing",
                "checkpointing trades recomputation in backward for the activations a backward "
                "pass would keep: it runs in mode \"train\" only; got mode " + Quoted(spec.mode));
  }
  if (spec.model != "mlp" && spec.model != "cnn" && spec.model != "transformer") {
    return Fail(error, "checkpointing",
                "checkpointing recomputes the blocks of a built-in model (mlp layers, cnn residual "
                "blocks, transformer encoder layers); model " + spec.model + " has none the worker knows");
  }
  if (spec.parallel) {
    return Fail(error, "checkpointing",
                "checkpointing runs in one process: a parallel job is not checkpointed");
  }
  return true;
}

// The job's `torch`: a version prefix, digits and dots ("2.15", "1.13.1"), or a whole
// version with its local part ("2.15.0+cu132").
bool ReadTorch(const json& value, std::string* out, JobSpecError* error) {
  const auto refuse = [&] {
    return Fail(error, "torch",
                "torch must be a LibTorch version or its prefix, such as \"2.15\" or \"1.13.1\" "
                "(digits and dots, then an optional +local part), got " + value.dump());
  };
  if (!value.is_string()) return refuse();
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty() || text.size() > kMaxTorchVersionLength) return refuse();
  const std::size_t plus = text.find('+');
  const std::string numbers = text.substr(0, plus);
  bool digit_before = false;
  for (char c : numbers) {
    if (c >= '0' && c <= '9') {
      digit_before = true;
    } else if (c == '.' && digit_before) {
      digit_before = false;
    } else {
      return refuse();
    }
  }
  if (!digit_before) return refuse();
  if (plus != std::string::npos) {
    const std::string local = text.substr(plus + 1);
    if (local.empty() || !std::all_of(local.begin(), local.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.';
        })) {
      return refuse();
    }
  }
  *out = text;
  return true;
}

std::optional<JobSpec> Parse(const json& job, bool require_identity, JobSpecError* error) {
  if (!job.is_object()) {
    Fail(error, "", "the job must be a JSON object, got " + std::string(job.type_name()));
    return std::nullopt;
  }
  JobSpec spec;
  if (require_identity) {
    if (!ReadRequiredInt(job, "job_id", 0, kNoLimit, &spec.job_id, error)) return std::nullopt;
    if (job.contains("attempt") &&
        !ReadInt(job.at("attempt"), "attempt", 1, kNoLimit, &spec.attempt, error)) {
      return std::nullopt;
    }
  }
  if (!ReadChoice(job, "model", KnownModels(), &spec.model, error)) return std::nullopt;
  const json args = job.value("model_args", json(nullptr));
  if (!args.is_null() && !args.is_object()) {
    Fail(error, "model_args", "model_args must be an object, got " + args.dump());
    return std::nullopt;
  }
  if (!ReadModelArgs(args.is_null() ? json::object() : args, &spec, error)) return std::nullopt;

  if (!ReadChoice(job, "mode", KnownModes(), &spec.mode, error) ||
      !ReadChoice(job, "dtype", KnownDtypes(), &spec.dtype, error) ||
      !ReadChoice(job, "device", {}, &spec.device, error)) {
    return std::nullopt;
  }
  // A frozen module has its weights folded into constants: nothing left to train.
  if (spec.model == "torchscript" && spec.file.jit != "none" && spec.mode != "inference") {
    Fail(error, "model_args.jit",
         "model_args.jit " + Quoted(spec.file.jit) + " runs in mode \"inference\" only (a frozen module "
         "has no parameters to train); got mode " + Quoted(spec.mode));
    return std::nullopt;
  }
  if (spec.device != "cpu" && !IsCudaDevice(spec.device)) {
    Fail(error, "device",
         "unknown device " + Quoted(spec.device) + "; known devices: " + kKnownDevices);
    return std::nullopt;
  }

  if (job.contains("search") && !ReadSearch(job.at("search"), &spec, error)) return std::nullopt;
  // A search starts at batch_size: 1 unless given.
  if (spec.max_batch && !job.contains("batch_size")) {
    spec.batch_size = 1;
  } else if (!ReadRequiredInt(job, "batch_size", 1, kNoLimit, &spec.batch_size, error)) {
    return std::nullopt;
  }
  if (job.contains("replicas") &&
      !ReadInt(job.at("replicas"), "replicas", 1, kMaxWorldSize, &spec.replicas, error)) {
    return std::nullopt;
  }
  if (job.contains(kSpreadPlacementKey)) {
    const json& placement = job.at(kSpreadPlacementKey);
    if (placement != "each" && placement != "any" && placement != kSpreadPlacement) {
      Fail(error, kSpreadPlacementKey,
           "placement must be \"each\", \"any\" or \"spread\" (its sweep's), got " + placement.dump());
      return std::nullopt;
    }
    spec.spread = placement == kSpreadPlacement;
  }
  if (job.contains("replica")) {
    ReplicaSpec replica;
    if (!ReadReplica(job.at("replica"), spec.replicas, &replica, error)) return std::nullopt;
    spec.replica = std::move(replica);
  }
  if (!ReadRequiredInt(job, "threads", 1, kMaxJobThreads, &spec.threads, error)) {
    return std::nullopt;
  }
  if (job.contains("interop_threads") && !ReadInt(job.at("interop_threads"), "interop_threads", 1,
                                                  kMaxJobThreads, &spec.interop_threads, error)) {
    return std::nullopt;
  }
  for (const auto& [key, flag] : {std::make_pair("onednn", &spec.onednn), std::make_pair("profile", &spec.profile),
                                  std::make_pair("checkpointing", &spec.checkpointing)}) {
    if (!job.contains(key)) continue;
    if (!job.at(key).is_boolean()) {
      Fail(error, key, std::string(key) + " must be true or false, got " + job.at(key).dump());
      return std::nullopt;
    }
    *flag = job.at(key).get<bool>();
  }
  if (job.contains("omp_wait_policy") && !job.at("omp_wait_policy").is_null()) {
    const json& policy = job.at("omp_wait_policy");
    const std::vector<std::string>& known = KnownOmpWaitPolicies();
    if (!policy.is_string() ||
        std::find(known.begin(), known.end(), policy.get<std::string>()) == known.end()) {
      Fail(error, "omp_wait_policy",
           "omp_wait_policy must be one of " + Join(known) + ", got " + policy.dump());
      return std::nullopt;
    }
    spec.omp_wait_policy = policy.get<std::string>();
  }
  if (job.contains("seed")) {
    std::int64_t seed = 0;
    if (!ReadInt(job.at("seed"), "seed", 0, kNoLimit, &seed, error)) return std::nullopt;
    spec.seed = static_cast<std::uint64_t>(seed);
  }
  if (job.contains("timing") && !job.at("timing").is_null() &&
      !ParseTiming(job.at("timing"), &spec.timing, error)) {
    return std::nullopt;
  }
  if (!ReadRepeats(job, &spec.processes, &spec.precision, error)) return std::nullopt;
  if (job.contains("host_check") && !ReadChoice(job, "host_check", KnownHostCheckPolicies(), &spec.host_check, error)) {
    return std::nullopt;
  }
  // The agent's (common/thread_placement.h): checked here, read there from the job.
  std::string thread_placement = kDefaultThreadPlacement;
  if (job.contains("thread_placement") && !job.at("thread_placement").is_null() &&
      !ReadChoice(job, "thread_placement", KnownThreadPlacements(), &thread_placement, error)) {
    return std::nullopt;
  }
  if (job.contains("distributed")) {
    DistributedSpec distributed;
    if (!ReadDistributed(job.at("distributed"), &distributed, error)) return std::nullopt;
    spec.distributed = std::move(distributed);
  }
  if (job.contains("parallel")) {
    ParallelSpec parallel;
    if (!ReadParallel(job.at("parallel"), &parallel, error)) return std::nullopt;
    spec.parallel = std::move(parallel);
  }
  if (job.contains("prune") && !job.at("prune").is_null()) {
    PruneSpec prune;
    if (!ReadPrune(job.at("prune"), &prune, error)) return std::nullopt;
    spec.prune = std::move(prune);
  }
  if (job.contains("reference") && !job.at("reference").is_null() &&
      !ReadReference(job.at("reference"), spec, &spec.reference, error)) {
    return std::nullopt;
  }
  if (job.contains("scenario") && !job.at("scenario").is_null() &&
      !ReadScenario(job.at("scenario"), &spec, error)) {
    return std::nullopt;
  }
  if (job.contains("torch") && !ReadTorch(job.at("torch"), &spec.torch, error)) return std::nullopt;
  if (job.contains("technique") && !ReadChoice(job, "technique", KnownTechniques(), &spec.technique, error)) {
    return std::nullopt;
  }
  if (!CheckCombination(spec, require_identity, error) || !CheckPruneAndReference(spec, error) ||
      !CheckTechniques(spec, error) || !CheckScenario(spec, error) || !CheckCompiled(spec, error) ||
      !CheckProcesses(spec, error) || !CheckThreadPlacement(spec, thread_placement, error)) {
    return std::nullopt;
  }
  return spec;
}

}  // namespace

bool ParseTiming(const json& t, TimingSpec* out, JobSpecError* error) {
  if (!t.is_object()) return Fail(error, "timing", "timing must be an object, got " + t.dump());
  // Read into a copy: a refused timing leaves *out as it was.
  TimingSpec copy = *out;
  TimingSpec* timing = &copy;
  for (const auto& item : t.items()) {
    const std::string& k = item.key();
    if (k != "warmup_s" && k != "min_time_s" && k != "max_time_s" && k != "target_ci" &&
        k != "target_iqr") {
      return Fail(error, "timing." + k,
                  "unknown key " + Quoted(k) +
                      " in timing; known keys: warmup_s, min_time_s, max_time_s, target_ci");
    }
  }
  // target_iqr, the spread sampling once stopped on, is still read (and range-checked) so
  // that sweep files and schedules written before target_ci keep working; it no longer
  // changes anything.
  double target_iqr = 0.05;
  if (!ReadSeconds(t, "warmup_s", &timing->warmup_s, error) ||
      !ReadSeconds(t, "min_time_s", &timing->min_time_s, error) ||
      !ReadSeconds(t, "max_time_s", &timing->max_time_s, error) ||
      !ReadSeconds(t, "target_ci", &timing->target_ci, error) ||
      !ReadSeconds(t, "target_iqr", &target_iqr, error)) {
    return false;
  }
  if (timing->min_time_s > timing->max_time_s) {
    return Fail(error, "timing.min_time_s",
                "timing.min_time_s (" + json(timing->min_time_s).dump() +
                    ") must not exceed timing.max_time_s (" + json(timing->max_time_s).dump() +
                    ")");
  }
  for (const auto& [key, value] : {std::pair<const char*, double>("target_ci", timing->target_ci),
                                   std::pair<const char*, double>("target_iqr", target_iqr)}) {
    if (value >= 1) {
      return Fail(error, std::string("timing.") + key,
                  std::string("timing.") + key + " must be in (0, 1), a fraction of the median, got " +
                      json(value).dump());
    }
  }
  *out = copy;
  return true;
}

bool ReadRepeats(const json& holder, std::int64_t* processes, std::optional<double>* precision,
                 JobSpecError* error) {
  if (holder.contains("processes") &&
      !ReadInt(holder.at("processes"), "processes", 1, kMaxJobProcesses, processes, error)) {
    return false;
  }
  if (holder.contains("precision") && !holder.at("precision").is_null()) {
    const json& value = holder.at("precision");
    if (!value.is_number() || !(value.get<double>() > 0) || !(value.get<double>() < 1)) {
      return Fail(error, "precision",
                  "precision must be a number in (0, 1), the half-width of the interval across "
                  "processes as a fraction of the median (0.01: +-1%), got " + value.dump());
    }
    *precision = value.get<double>();
  }
  return true;
}

const std::vector<std::string>& KnownHostCheckPolicies() {
  static const std::vector<std::string> policies = {"record", "wait", "refuse"};
  return policies;
}

bool RunsInOneProcess(const JobSpec& spec) {
  return !spec.parallel && !spec.distributed && !IsCollectiveModel(spec.model) && spec.replicas == 1 &&
         !spec.max_batch;
}

std::int64_t JobWorldSize(const JobSpec& spec) {
  if (spec.distributed) return spec.distributed->world_size;
  if (spec.parallel && spec.parallel->world_size > 0) return spec.parallel->world_size;
  return 1;
}

std::optional<JobSpec> ParseJobSpec(const json& job, JobSpecError* error) {
  return Parse(job, /*require_identity=*/true, error);
}

std::optional<JobSpec> ParseJobConfig(const json& job, JobSpecError* error) {
  return Parse(job, /*require_identity=*/false, error);
}

std::optional<int> ModelArgDepth(const std::string& model, const std::string& arg) {
  for (const ModelArg& known : ArgsOf(model)) {
    if (arg == known.key) return known.depth;
  }
  return std::nullopt;
}

const std::vector<std::string>& KnownModels() {
  static const std::vector<std::string> models = {"matmul",      "mlp",       "cnn",
                                                  "transformer", "torchscript", "aoti",
                                                  "allreduce",   "broadcast",   "allgather"};
  return models;
}

bool IsModelFile(const std::string& model) { return model == "torchscript" || model == "aoti"; }

const std::vector<std::string>& KnownTechniques() {
  static const std::vector<std::string> techniques = {"eager", "torchscript", "aoti", "cuda_graph"};
  return techniques;
}

namespace {
// The numeric components of a torch version: "2.15.0+cu132" -> {2, 15, 0}.
std::vector<long> VersionComponents(const std::string& version) {
  std::vector<long> parts;
  std::size_t i = 0;
  while (i < version.size() && version[i] != '+') {
    long value = 0;
    bool digits = false;
    while (i < version.size() && version[i] >= '0' && version[i] <= '9') {
      value = value * 10 + (version[i++] - '0');
      digits = true;
      if (value > 1000000) break;
    }
    if (!digits) break;
    parts.push_back(value);
    if (i < version.size() && version[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  return parts;
}
}  // namespace

bool TorchVersionMatches(const std::string& prefix, const std::string& version) {
  if (prefix.empty()) return true;
  if (version.compare(0, prefix.size(), prefix) != 0) return false;
  return version.size() == prefix.size() || version[prefix.size()] == '.' || version[prefix.size()] == '+';
}

int CompareTorchVersions(const std::string& a, const std::string& b) {
  const std::vector<long> x = VersionComponents(a);
  const std::vector<long> y = VersionComponents(b);
  for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const long p = i < x.size() ? x[i] : 0;
    const long q = i < y.size() ? y[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

bool IsCollectiveModel(const std::string& model) {
  return model == "allreduce" || model == "broadcast" || model == "allgather";
}

const std::vector<std::string>& KnownMemoryFormats() {
  static const std::vector<std::string> formats = {"contiguous", "channels_last"};
  return formats;
}

const std::vector<std::string>& KnownJitModes() {
  static const std::vector<std::string> modes = {"none", "freeze", "optimize"};
  return modes;
}

const std::vector<std::string>& KnownPruneKinds() {
  static const std::vector<std::string> kinds = {"magnitude", "structured"};
  return kinds;
}

const std::vector<std::string>& KnownScenarios() {
  static const std::vector<std::string> kinds = {"offline", "single_stream", "server"};
  return kinds;
}

const std::vector<std::string>& KnownModes() {
  static const std::vector<std::string> modes = {"inference", "train"};
  return modes;
}

const std::vector<std::string>& KnownDtypes() {
  static const std::vector<std::string> dtypes = {"fp32", "tf32", "bf16", "int8"};
  return dtypes;
}

const std::vector<std::string>& KnownOmpWaitPolicies() {
  static const std::vector<std::string> policies = {"default", "passive", "active"};
  return policies;
}

std::optional<std::string> OmpWaitPolicyVariable(const std::string& policy) {
  if (policy == "passive") return "PASSIVE";
  if (policy == "active") return "ACTIVE";
  return std::nullopt;
}

std::string JobOmpWaitPolicy(const json& job) {
  if (!job.is_object()) return "default";
  const auto it = job.find("omp_wait_policy");
  return it != job.end() && it->is_string() ? it->get<std::string>() : "default";
}

bool IsCudaDevice(const std::string& device) {
  if (device == "cuda") return true;
  const std::string prefix = "cuda:";
  if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(device.begin() + static_cast<std::ptrdiff_t>(prefix.size()), device.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace benchfleet
