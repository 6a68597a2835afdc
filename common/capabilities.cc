#include "common/capabilities.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Longest string accepted for a capability (a CPU model name, a hostname).
constexpr size_t kMaxCapabilityText = 1024;

Status Object(const json& parent, const char* key, const std::string& where, const json** out) {
  *out = nullptr;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidArgument(where + "." + key + ": must be an object");
  *out = &*it;
  return Status::Ok();
}

Status Text(const json* parent, const char* key, const std::string& where, std::string* out) {
  if (parent == nullptr) return Status::Ok();
  auto it = parent->find(key);
  if (it == parent->end() || it->is_null()) return Status::Ok();
  if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxCapabilityText) {
    return InvalidArgument(where + "." + key + ": must be a string of at most " +
                           std::to_string(kMaxCapabilityText) + " characters, got " +
                           it->dump().substr(0, 40));
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

Status Count(const json* parent, const char* key, const std::string& where,
             std::optional<int64_t>* out) {
  if (parent == nullptr) return Status::Ok();
  auto it = parent->find(key);
  if (it == parent->end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return InvalidArgument(where + "." + key + ": must be an integer >= 0, got " +
                           it->dump().substr(0, 40));
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

}  // namespace

StatusOr<Capabilities> ParseCapabilities(const json& capabilities) {
  const std::string where = "capabilities";
  if (!capabilities.is_object()) return InvalidArgument(where + ": must be an object");
  Capabilities out;
  const json *host = nullptr, *torch = nullptr;
  RETURN_IF_ERROR(Object(capabilities, "host", where, &host));
  RETURN_IF_ERROR(Object(capabilities, "torch", where, &torch));
  const std::string host_at = where + ".host", torch_at = where + ".torch";
  RETURN_IF_ERROR(Text(host, "hostname", host_at, &out.hostname));
  RETURN_IF_ERROR(Text(host, "machine_id", host_at, &out.machine_id));
  RETURN_IF_ERROR(Text(host, "cpu_model", host_at, &out.cpu_model));
  RETURN_IF_ERROR(Count(host, "logical_cpus", host_at, &out.logical_cpus));
  RETURN_IF_ERROR(Count(host, "memory_mb", host_at, &out.memory_mb));
  for (const char* key : {"allowed_cpus", "kernel", "arch", "os", "nvidia_driver", "benchfleet_version"}) {
    std::string ignored;
    RETURN_IF_ERROR(Text(host, key, host_at, &ignored));
  }
  RETURN_IF_ERROR(Text(torch, "torch_version", torch_at, &out.torch_version));
  if (torch != nullptr) {
    auto cuda = torch->find("cuda_available");
    if (cuda != torch->end() && !cuda->is_null()) {
      if (!cuda->is_boolean()) return InvalidArgument(torch_at + ".cuda_available: must be a boolean");
      out.cuda_available = cuda->get<bool>();
    }
    std::optional<int64_t> ignored;
    RETURN_IF_ERROR(Count(torch, "cuda_device_count", torch_at, &ignored));
    // The CUDA and cuDNN LibTorch runs with: the fingerprint's `cuda` reads cuda_version.
    for (const char* key : {"cuda_version", "cudnn_version"}) {
      std::string ignored_text;
      RETURN_IF_ERROR(Text(torch, key, torch_at, &ignored_text));
    }
  }
  RETURN_IF_ERROR(Text(&capabilities, "cpus", where, &out.cpus));
  auto gpus = capabilities.find("gpus");
  if (gpus != capabilities.end() && !gpus->is_null()) {
    if (!gpus->is_array()) return InvalidArgument(where + ".gpus: must be an array");
    for (size_t i = 0; i < gpus->size(); ++i) {
      const json& gpu = (*gpus)[i];
      const std::string at = where + ".gpus[" + std::to_string(i) + "]";
      if (!gpu.is_object()) return InvalidArgument(at + ": must be an object");
      GpuInfo info;
      std::optional<int64_t> index;
      RETURN_IF_ERROR(Count(&gpu, "index", at, &index));
      info.index = index.value_or(static_cast<int64_t>(i));
      RETURN_IF_ERROR(Text(&gpu, "name", at, &info.name));
      auto memory = gpu.find("memory_mb");
      if (memory != gpu.end() && !memory->is_null()) {
        if (!memory->is_number() || memory->get<double>() < 0) {
          return InvalidArgument(at + ".memory_mb: must be a number >= 0");
        }
        info.memory_mb = memory->get<double>();
      }
      out.gpus.push_back(std::move(info));
    }
  }
  out.raw = capabilities;
  return out;
}

}  // namespace benchfleet
