// What an AOTInductor package (a `.pt2` from torch._inductor.aoti_compile_and_package)
// says of itself, read without LibTorch: the package is a zip whose entries PyTorch
// stores uncompressed, and each compiled model has a small JSON of metadata beside its
// library (<archive>/data/aotinductor/<model>/<hash>.wrapper_metadata.json). The
// coordinator reads it from its copy of an uploaded package (the device and torch a job
// of it needs: docs/scheduling.md, Workers); the worker, before it loads one.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace benchfleet {

// The metadata key the worker's package compiler writes, and the one a user's own
// aoti_compile_and_package call should write too
// (inductor_configs={"aot_inductor.metadata": {"torch_version": torch.__version__}}):
// packages do not otherwise say which torch made them.
inline constexpr const char* kAotiTorchVersionKey = "torch_version";
// The model a package's loader runs by default (AOTIModelPackageLoader's model_name).
inline constexpr const char* kAotiDefaultModel = "model";
// A metadata entry larger than this is not one.
inline constexpr int64_t kMaxAotiMetadataBytes = 1 << 20;

struct AotiPackageFacts {
  std::string model;          // the model the facts are of ("model")
  std::string device;         // AOTI_DEVICE_KEY: "cpu", "cuda"
  std::string machine;        // AOTI_MACHINE: "x86_64", "aarch64"; empty when not said
  std::string platform;       // AOTI_PLATFORM: "linux"; empty when not said
  std::string torch_version;  // kAotiTorchVersionKey; empty when not said
  nlohmann::json metadata = nlohmann::json::object();  // the whole metadata object
};

// Reads the facts of the package at `path`. Errors say what is wrong and what to do
// (kInvalidArgument: not a zip; no AOTInductor model in it; its metadata compressed,
// unreadable or without a device; kNotFound, kUnavailable: the file cannot be read).
StatusOr<AotiPackageFacts> ReadAotiPackage(const std::string& path);

}  // namespace benchfleet
