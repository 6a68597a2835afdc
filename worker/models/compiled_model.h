// The technique axis (schemas/worker.md, Technique): a zoo model compiled by the python
// of the torch this worker links (worker/python/compile_model.py) into a TorchScript
// file (torch.jit.trace) or an AOTInductor package (torch.export, then
// aoti_compile_and_package), with the worker's own weights, on the host that runs it
// (Inductor compiles for this CPU), at job time. The file is cached by content: a
// SHA-1 of the weights, the model's configuration, this LibTorch's version and the
// compiler's own sources names it, so the next job of the same model on this host loads
// it without compiling.
#ifndef BENCHFLEET_WORKER_MODELS_COMPILED_MODEL_H_
#define BENCHFLEET_WORKER_MODELS_COMPILED_MODEL_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "worker/models/model.h"

namespace benchfleet::worker {

// What the package cache keeps at most: past it the least recently used files go (a
// transformer's package holds its weights, a few hundred MB).
inline constexpr std::uintmax_t kMaxPackageCacheBytes = std::uintmax_t{20} << 30;

// The int8 paths a result records (its `quantization`): eager, the worker's Linear layers
// through quantized::linear_dynamic (the eager API's quantize_dynamic, which PyTorch 2.x
// deprecates); technique aoti, PT2E with the X86 Inductor quantizer (compile_model.py).
inline constexpr const char* kEagerInt8Path = "eager_dynamic";
inline constexpr const char* kPt2eInt8Path = "pt2e_x86_inductor_dynamic";

struct CompiledModel {
  std::unique_ptr<Model> model;  // what is timed in the eager model's place
  // The result's `compile`: {technique, compile_s, export_s, cached, package_sha256,
  // load_s, package_torch_version, inductor_configs}.
  nlohmann::json report;
  std::string quantization;  // int8: kPt2eInt8Path; else empty
};

// Compiles `eager` (the zoo model of `spec`, its weights drawn and its BatchNorm
// calibrated, in the job's dtype on its device; int8: still fp32, PT2E quantizes it) as
// spec.technique asks, or takes the file from the cache, and loads it. Throws
// WorkloadError saying why when this worker cannot (no python of its torch, a LibTorch
// without AOTInductor) or the compiler failed (with the last line it printed).
CompiledModel CompileZooModel(const JobSpec& spec, Model& eager);

// The techniques this worker runs (common/job_spec.h, KnownTechniques): "eager";
// "torchscript" and "aoti" where the python of its torch and the compiler's files are
// there (and, for aoti, LibTorch has the package loader); "cuda_graph" where its LibTorch
// has CUDA and sees a GPU. Its probe reports them.
std::vector<std::string> SupportedTechniques();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_COMPILED_MODEL_H_
