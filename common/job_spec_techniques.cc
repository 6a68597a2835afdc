// How a job of one model runs and what it is judged against: its dtype, pruning, a
// reference model, profiling and checkpointing, a compiled technique or package, and
// the torch it runs on.

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"

namespace benchfleet {

using nlohmann::json;

// The job's `prune` object (PruneSpec): its kind and the one share that kind takes.
StatusOr<PruneSpec> ReadPrune(const json& value) {
  if (!value.is_object()) {
    return FieldError(
        "prune",
        "prune must be an object (e.g. {\"kind\": \"structured\", \"ratio\": 0.5}) or null, got " +
            value.dump());
  }
  const json kind = value.value("kind", json(nullptr));
  const std::vector<std::string>& kinds = KnownPruneKinds();
  if (!kind.is_string() ||
      std::find(kinds.begin(), kinds.end(), kind.get<std::string>()) == kinds.end()) {
    return FieldError("prune.kind",
                      "prune.kind must be one of " + Join(kinds) + ", got " + kind.dump());
  }
  PruneSpec out;
  out.kind = kind.get<std::string>();
  const bool magnitude = out.kind == "magnitude";
  const std::string share = magnitude ? "sparsity" : "ratio";
  for (const auto& item : value.items()) {
    if (item.key() != "kind" && item.key() != share) {
      return FieldError("prune." + item.key(), "unknown key " + Quoted(item.key()) +
                                                   " in prune of kind " + Quoted(out.kind) +
                                                   "; known keys: kind, " + share);
    }
  }
  const std::string field = "prune." + share;
  const json amount = value.value(share, json(nullptr));
  if (!amount.is_number() || !std::isfinite(amount.get<double>()) || amount.get<double>() < 0 ||
      amount.get<double>() >= 1) {
    return FieldError(field, field + " must be a number in [0, 1), the share of " +
                                 (magnitude ? "each layer's weights set to zero"
                                            : "the hidden neurons or inner channels removed") +
                                 ", got " +
                                 (amount.is_null() ? std::string("nothing") : amount.dump()));
  }
  (magnitude ? out.sparsity : out.ratio) = amount.get<double>();
  return out;
}

// The job's `reference` object: {"model": M, "model_args": {...}}, M's arguments checked
// by the rules of a job of M. Errors name reference.<field>.
StatusOr<ReferenceSpec> ReadReference(const json& value, const JobSpec& job) {
  if (!value.is_object()) {
    return FieldError(
        "reference",
        "reference must be an object (e.g. {\"model\": \"torchscript\", \"model_args\": {\"path\": "
        "\"/models/teacher.pt\"}}) or null, got " +
            value.dump());
  }
  for (const auto& item : value.items()) {
    if (item.key() != "model" && item.key() != "model_args") {
      return FieldError(
          "reference." + item.key(),
          "unknown key " + Quoted(item.key()) + " in reference; known keys: model, model_args");
    }
  }
  auto ref = std::make_shared<JobSpec>();
  const json model = value.value("model", json(nullptr));
  if (!model.is_string() || IsCollectiveModel(model.get<std::string>()) || model == "aoti" ||
      std::find(KnownModels().begin(), KnownModels().end(), model.get<std::string>()) ==
          KnownModels().end()) {
    return FieldError(
        "reference.model",
        "reference.model must be one of matmul, mlp, cnn, transformer, torchscript, got " +
            model.dump());
  }
  ref->model = model.get<std::string>();
  json args = value.value("model_args", json::object());
  if (!args.is_object()) {
    return FieldError("reference.model_args",
                      "reference.model_args must be an object, got " + args.dump());
  }
  if (ref->model == "torchscript") {
    if (args.contains("inputs")) {
      return FieldError(
          "reference.model_args.inputs",
          "reference.model_args.inputs: a reference runs on the job's own inputs; leave it out");
    }
    args["inputs"] = json::array({json::array({1})});  // read below, then replaced by the job's
  }
  if (Status status = ReadModelArgs(args, ref.get()); !status.ok()) {
    const JobSpecError error = ToJobSpecError(status);
    return FieldError(
        "reference." + error.field,
        (error.message.rfind("model_args", 0) == 0 ? "reference." : "reference: ") + error.message);
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
  return ReferenceSpec(std::move(ref));
}

// The job's `torch`: a version prefix, digits and dots ("2.15", "1.13.1"), or a whole
// version with its local part ("2.15.0+cu132").
StatusOr<std::string> ReadTorch(const json& value) {
  const auto refused = [&] {
    return FieldError(
        "torch",
        "torch must be a LibTorch version or its prefix, such as \"2.15\" or \"1.13.1\" "
        "(digits and dots, then an optional +local part), got " +
            value.dump());
  };
  if (!value.is_string()) return refused();
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty() || text.size() > kMaxTorchVersionLength) return refused();
  const std::size_t plus = text.find('+');
  const std::string numbers = text.substr(0, plus);
  bool digit_before = false;
  for (char c : numbers) {
    if (c >= '0' && c <= '9') {
      digit_before = true;
    } else if (c == '.' && digit_before) {
      digit_before = false;
    } else {
      return refused();
    }
  }
  if (!digit_before) return refused();
  if (plus != std::string::npos) {
    const std::string local = text.substr(plus + 1);
    if (local.empty() || !std::all_of(local.begin(), local.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 c == '.';
        })) {
      return refused();
    }
  }
  return text;
}

Status CheckDtype(const JobSpec& spec) {
  if (spec.dtype == "tf32" && !IsCudaDevice(spec.device)) {
    return FieldError(
        "dtype",
        "dtype \"tf32\" is fp32 with TF32 tensor-core math in cuBLAS and cuDNN, a CUDA "
        "mode; on device " +
            Quoted(spec.device) + " use \"fp32\"");
  }
  if (spec.dtype != "int8") return Status::Ok();
  if (spec.mode != "inference") {
    return FieldError("dtype",
                      "dtype \"int8\" (dynamic quantization) runs in mode \"inference\" only: its "
                      "quantized Linear has no backward; got mode " +
                          Quoted(spec.mode));
  }
  if (spec.model == "matmul") {
    return FieldError("dtype",
                      "int8 dynamic quantization needs Linear layers; model matmul has none");
  }
  if (IsModelFile(spec.model)) {
    return FieldError("dtype",
                      "int8 dynamic quantization needs Linear layers the worker builds itself; a " +
                          spec.model +
                          " model runs as saved (quantize it before saving and use dtype "
                          "\"fp32\")");
  }
  if (spec.device != "cpu") {
    return FieldError("dtype", "int8 dynamic quantization runs on the CPU only; got device " +
                                   Quoted(spec.device));
  }
  return Status::Ok();
}

// prune and reference: what each can run with.
Status CheckPruneAndReference(const JobSpec& spec) {
  if (!spec.prune && !spec.reference) return Status::Ok();
  const char* key = spec.prune ? "prune" : "reference";
  if (spec.prune && spec.reference) {
    return FieldError(
        "reference",
        "prune and reference each set what the accuracy is measured against (the unpruned "
        "model, a second model): give one of them");
  }
  if (IsCollectiveModel(spec.model) || spec.parallel) {
    return FieldError(key, std::string(key) + " runs a model in one process; model " + spec.model +
                               (spec.parallel ? " with parallel" : " (a collective)") +
                               " cannot take it");
  }
  if (!spec.prune) return Status::Ok();
  const bool structured = spec.prune->kind == "structured";
  if (spec.model == "matmul" || IsModelFile(spec.model) ||
      (structured && spec.model == "transformer")) {
    const std::string why = spec.model == "matmul" ? "it has no Linear or Conv layers"
                            : IsModelFile(spec.model)
                                ? "the worker prunes only the layers it builds itself; prune the "
                                  "module before saving it "
                                  "and judge it against the unpruned one with reference"
                                : "structured pruning removes the hidden neurons of an mlp or the "
                                  "inner channels of a cnn's "
                                  "residual blocks, where the layers around them can shrink to "
                                  "match; use kind \"magnitude\"";
    return FieldError("prune.kind", "prune of kind " + Quoted(spec.prune->kind) +
                                        " cannot prune model " + spec.model + ": " + why);
  }
  if (structured && spec.model == "mlp" && spec.mlp.layers.size() < 3) {
    return FieldError("prune.kind",
                      "structured pruning removes hidden neurons; model_args.layers " +
                          json(spec.mlp.layers).dump() + " has no hidden layer");
  }
  return Status::Ok();
}

// profile and checkpointing: what each needs of the rest of the job.
Status CheckTechniques(const JobSpec& spec) {
  // Each rank would profile its own block, and its collective calls must pair with the
  // other ranks': only a job of one process, one model, is profiled.
  if (spec.profile && (spec.distributed || spec.parallel)) {
    return FieldError(
        "profile",
        "profile records the operators of one process's model: a job of several ranks "
        "(collectives, parallel) is not profiled");
  }
  if (!spec.checkpointing) return Status::Ok();
  if (spec.mode != "train") {
    return FieldError(
        "checkpointing",
        "checkpointing trades recomputation in backward for the activations a backward "
        "pass would keep: it runs in mode \"train\" only; got mode " +
            Quoted(spec.mode));
  }
  if (spec.model != "mlp" && spec.model != "cnn" && spec.model != "transformer") {
    return FieldError(
        "checkpointing",
        "checkpointing recomputes the blocks of a built-in model (mlp layers, cnn residual "
        "blocks, transformer encoder layers); model " +
            spec.model + " has none the worker knows");
  }
  if (spec.parallel) {
    return FieldError("checkpointing",
                      "checkpointing runs in one process: a parallel job is not checkpointed");
  }
  return Status::Ok();
}

// An AOTInductor package, and the zoo models run by another technique than eager: what
// each can run with. Both are inference of one process at the batch compiled for.
Status CheckCompiled(const JobSpec& spec) {
  const bool package = spec.model == "aoti";
  if (!package && spec.technique == "eager") return Status::Ok();
  const std::string what =
      package ? "model aoti (an AOTInductor package)" : "technique " + Quoted(spec.technique);
  if (package && spec.technique != "eager") {
    return FieldError(
        "technique",
        "technique " + Quoted(spec.technique) +
            " compiles a zoo model (matmul, mlp, cnn, "
            "transformer); model aoti is a package compiled already: leave technique out");
  }
  if (!package && spec.model != "matmul" && spec.model != "mlp" && spec.model != "cnn" &&
      spec.model != "transformer") {
    return FieldError("technique",
                      what + " compiles a zoo model (matmul, mlp, cnn, transformer); model " +
                          spec.model + " runs eager only");
  }
  if (spec.mode != "inference") {
    return FieldError(package ? "mode" : "technique",
                      what +
                          " runs in mode \"inference\" only (a compiled forward pass has no "
                          "backward here); got mode " +
                          Quoted(spec.mode));
  }
  if (spec.technique == "cuda_graph" && !IsCudaDevice(spec.device)) {
    return FieldError(
        "technique",
        "technique \"cuda_graph\" captures a forward pass's CUDA kernels into a graph: it runs on "
        "device \"cuda\" only; got device " +
            Quoted(spec.device));
  }
  if (spec.dtype == "int8" && spec.technique != "aoti") {
    return FieldError(
        "dtype",
        what +
            " takes dtype fp32, tf32 or bf16; int8 goes through PT2E into an AOTI "
            "package (technique \"aoti\") or through the eager path (technique \"eager\")");
  }
  const char* other = spec.prune                          ? "prune"
                      : spec.reference                    ? "reference"
                      : spec.parallel || spec.distributed ? "parallel"
                      : spec.replicas > 1                 ? "replicas"
                      : spec.max_batch                    ? "search"
                      : spec.scenario != "offline"        ? "scenario"
                                                          : nullptr;
  if (other != nullptr) {
    return FieldError(other,
                      what + " runs one process at the batch it was compiled for: it takes no " +
                          std::string(other));
  }
  return Status::Ok();
}

const std::vector<std::string>& KnownPruneKinds() {
  static const std::vector<std::string> kinds = {"magnitude", "structured"};
  return kinds;
}

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
  return version.size() == prefix.size() || version[prefix.size()] == '.' ||
         version[prefix.size()] == '+';
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

}  // namespace benchfleet
