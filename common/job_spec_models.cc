// model_args of each model (schemas/worker.md): each key optional, its default in
// common/job_spec.h applying, unless listed otherwise there; unknown keys are errors.

#include <algorithm>
#include <map>
#include <utility>

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"
#include "common/sha256.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Each built-in model's arguments and how deeply their values nest (ModelArgDepth).
struct ModelArg {
  const char* key;
  int depth;
};
const std::vector<ModelArg>& ArgsOf(const std::string& model) {
  static const std::map<std::string, std::vector<ModelArg>> args = {
      {"matmul", {{"m", 0}, {"k", 0}, {"n", 0}}},
      {"mlp", {{"layers", 1}}},
      {"cnn",
       {{"width", 0},
        {"blocks", 1},
        {"image_size", 0},
        {"channels", 0},
        {"classes", 0},
        {"memory_format", 0}}},
      {"transformer", {{"hidden", 0}, {"heads", 0}, {"layers", 0}, {"ffn", 0}, {"seq_len", 0}}},
      {"torchscript",
       {{"path", 0}, {"sha256", 0}, {"agent_path", 0}, {"inputs", 2}, {"jit", 0}, {"name", 0}}},
      {"aoti", {{"path", 0}, {"sha256", 0}, {"agent_path", 0}, {"inputs", 2}, {"name", 0}}},
      {"allreduce", {{"bytes", 0}}},
      {"broadcast", {{"bytes", 0}}},
      {"allgather", {{"bytes", 0}}}};
  static const std::vector<ModelArg> none;
  auto it = args.find(model);
  return it == args.end() ? none : it->second;
}

// One model's model_args: each reader leaves its argument's default where it is absent.
class ArgsReader {
 public:
  ArgsReader(const json& args, std::string model) : args_(args), model_(std::move(model)) {
    for (const ModelArg& arg : ArgsOf(model_)) keys_.push_back(arg.key);
  }

  Status CheckKeys() const {
    for (const auto& item : args_.items()) {
      if (std::find(keys_.begin(), keys_.end(), item.key()) == keys_.end()) {
        return FieldError("model_args." + item.key(), "unknown key " + Quoted(item.key()) +
                                                          " in model_args; known keys for " +
                                                          model_ + ": " + Join(keys_));
      }
    }
    return Status::Ok();
  }

  // A model dimension, in [1, kMaxModelDimension].
  Status Int(const char* key, std::int64_t* out) const {
    if (!args_.contains(key)) return Status::Ok();
    ASSIGN_OR_RETURN(
        *out, ReadInt(args_.at(key), std::string("model_args.") + key, 1, kMaxModelDimension));
    return Status::Ok();
  }

  const json* Find(const char* key) const { return args_.contains(key) ? &args_.at(key) : nullptr; }

  // A string argument that is one of `accepted`.
  Status Choice(const char* key, const std::vector<std::string>& accepted, std::string* out) const {
    if (!args_.contains(key)) return Status::Ok();
    const json& value = args_.at(key);
    if (!value.is_string() ||
        std::find(accepted.begin(), accepted.end(), value.get<std::string>()) == accepted.end()) {
      return FieldError(std::string("model_args.") + key, std::string("model_args.") + key +
                                                              " must be one of " + Join(accepted) +
                                                              ", got " + value.dump());
    }
    *out = value.get<std::string>();
    return Status::Ok();
  }

 private:
  const json& args_;
  std::string model_;
  std::vector<std::string> keys_;
};

Status ReadCnnArgs(const ArgsReader& r, CnnArgs* c) {
  RETURN_IF_ERROR(r.Int("width", &c->width));
  RETURN_IF_ERROR(r.Int("image_size", &c->image_size));
  RETURN_IF_ERROR(r.Int("channels", &c->channels));
  RETURN_IF_ERROR(r.Int("classes", &c->classes));
  RETURN_IF_ERROR(r.Choice("memory_format", KnownMemoryFormats(), &c->memory_format));
  const json* blocks = r.Find("blocks");
  if (blocks == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(c->blocks, ReadDims(*blocks, "model_args.blocks", 4, 1, "[2, 2, 2, 2]"));
  if (c->blocks.size() != 4) {
    return FieldError(
        "model_args.blocks",
        "model_args.blocks must list the BasicBlocks of exactly 4 stages (e.g. [2, 2, "
        "2, 2]), got " +
            blocks->dump());
  }
  return Status::Ok();
}

Status ReadTransformerArgs(const ArgsReader& r, TransformerArgs* t) {
  RETURN_IF_ERROR(r.Int("hidden", &t->hidden));
  RETURN_IF_ERROR(r.Int("heads", &t->heads));
  RETURN_IF_ERROR(r.Int("layers", &t->layers));
  RETURN_IF_ERROR(r.Int("ffn", &t->ffn));
  RETURN_IF_ERROR(r.Int("seq_len", &t->seq_len));
  if (t->hidden % t->heads != 0) {
    return FieldError("model_args.heads", "model_args.hidden (" + std::to_string(t->hidden) +
                                              ") must be divisible by model_args.heads (" +
                                              std::to_string(t->heads) + ")");
  }
  return Status::Ok();
}

// torchscript and aoti: where the file is and its inputs are required; nothing
// sensible to default to. The file is named by its content (`sha256`, what a submit
// uploaded), by a path on the agent's host (`agent_path`, under its --models-dir), or,
// for the worker, by the path the agent put it at (`path`; in a sweep file, the file on
// the submitting machine that `benchfleet submit` uploads). Which of them a job may
// carry where is checked by the coordinator and the agent (common/model_files.h).
Status ReadModelFileArgs(const ArgsReader& r, bool torchscript, ModelFileArgs* file) {
  const std::string what = torchscript ? "a TorchScript file (saved with torch.jit.save)"
                                       : "an AOTInductor package (a .pt2 from "
                                         "torch._inductor.aoti_compile_and_package)";
  auto absolute_path = [&](const char* key, std::string* out) {
    const json* value = r.Find(key);
    if (value == nullptr) return Status::Ok();
    if (!value->is_string() || value->get<std::string>().empty() ||
        value->get<std::string>().front() != '/' ||
        value->get<std::string>().size() > kMaxModelPathLength) {
      return FieldError(std::string("model_args.") + key, std::string("model_args.") + key +
                                                              " must be the absolute path of " +
                                                              what + ", got " + value->dump());
    }
    *out = value->get<std::string>();
    return Status::Ok();
  };
  file->path.clear();
  file->agent_path.clear();
  file->sha256.clear();
  RETURN_IF_ERROR(absolute_path("path", &file->path));
  RETURN_IF_ERROR(absolute_path("agent_path", &file->agent_path));
  if (const json* sha256 = r.Find("sha256")) {
    if (!sha256->is_string() || !IsSha256Hex(sha256->get<std::string>())) {
      return FieldError(
          "model_args.sha256",
          "model_args.sha256 must be a model's SHA-256 as 64 lowercase hex digits, got " +
              sha256->dump());
    }
    file->sha256 = sha256->get<std::string>();
  }
  if (file->path.empty() && file->sha256.empty() && file->agent_path.empty()) {
    return FieldError(
        "model_args.path",
        "model_args.path must be the path of " + what +
            " that benchfleet submit uploads, or model_args.sha256 a model already uploaded, or "
            "model_args.agent_path a file under each agent's --models-dir; got none of them");
  }
  if (!file->sha256.empty() && !file->agent_path.empty()) {
    return FieldError(
        "model_args.agent_path",
        "model_args.sha256 and model_args.agent_path name two files; give one of them");
  }
  // What people call the model, whatever its content: `compare` pairs two sweeps' results
  // of the model by it when its file changed (docs/results.md, Compare).
  file->name.clear();
  if (const json* name = r.Find("name")) {
    if (!name->is_string() || name->get<std::string>().empty() ||
        name->get<std::string>().size() > kMaxModelNameLength) {
      return FieldError("model_args.name", "model_args.name must be a string of 1 to " +
                                               std::to_string(kMaxModelNameLength) +
                                               " characters, got " + name->dump());
    }
    file->name = name->get<std::string>();
  }
  const json* inputs = r.Find("inputs");
  if (inputs == nullptr || !inputs->is_array() || inputs->empty()) {
    return FieldError("model_args.inputs",
                      "model_args.inputs must be an array with one shape per forward() argument, "
                      "without the batch dimension (e.g. [[3, 224, 224]]), got " +
                          (inputs == nullptr ? std::string("nothing") : inputs->dump()));
  }
  if (torchscript) RETURN_IF_ERROR(r.Choice("jit", KnownJitModes(), &file->jit));
  file->inputs.clear();
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    ASSIGN_OR_RETURN(std::vector<std::int64_t> shape,
                     ReadDims((*inputs)[i], "model_args.inputs[" + std::to_string(i) + "]", 0, 1,
                              "[3, 224, 224]"));
    file->inputs.push_back(std::move(shape));
  }
  return Status::Ok();
}

}  // namespace

Status ReadModelArgs(const json& args, JobSpec* spec) {
  const std::string& model = spec->model;
  const ArgsReader r(args, model);
  RETURN_IF_ERROR(r.CheckKeys());
  if (model == "matmul") {
    RETURN_IF_ERROR(r.Int("m", &spec->matmul.m));
    RETURN_IF_ERROR(r.Int("k", &spec->matmul.k));
    return r.Int("n", &spec->matmul.n);
  }
  if (model == "mlp") {
    const json* layers = r.Find("layers");
    if (layers == nullptr) return Status::Ok();
    ASSIGN_OR_RETURN(spec->mlp.layers,
                     ReadDims(*layers, "model_args.layers", 2, 1, "[1024, 1024, 10]"));
    return Status::Ok();
  }
  if (model == "cnn") return ReadCnnArgs(r, &spec->cnn);
  if (IsCollectiveModel(model)) {
    const json* bytes = r.Find("bytes");
    if (bytes == nullptr) return Status::Ok();
    ASSIGN_OR_RETURN(spec->collective.bytes,
                     ReadInt(*bytes, "model_args.bytes", 1, kMaxCollectiveBytes));
    return Status::Ok();
  }
  if (model == "transformer") return ReadTransformerArgs(r, &spec->transformer);
  return ReadModelFileArgs(r, model == "torchscript", &spec->file);
}

// A frozen module has its weights folded into constants: nothing left to train.
Status CheckJitMode(const JobSpec& spec) {
  if (spec.model == "torchscript" && spec.file.jit != "none" && spec.mode != "inference") {
    return FieldError("model_args.jit", "model_args.jit " + Quoted(spec.file.jit) +
                                            " runs in mode \"inference\" only (a frozen module "
                                            "has no parameters to train); got mode " +
                                            Quoted(spec.mode));
  }
  return Status::Ok();
}

std::optional<int> ModelArgDepth(const std::string& model, const std::string& arg) {
  for (const ModelArg& known : ArgsOf(model)) {
    if (arg == known.key) return known.depth;
  }
  return std::nullopt;
}

const std::vector<std::string>& KnownModels() {
  static const std::vector<std::string> models = {"matmul",      "mlp",         "cnn",
                                                  "transformer", "torchscript", "aoti",
                                                  "allreduce",   "broadcast",   "allgather"};
  return models;
}

bool IsModelFile(const std::string& model) { return model == "torchscript" || model == "aoti"; }

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

}  // namespace benchfleet
