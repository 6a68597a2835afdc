#include "common/capabilities.h"

#include <tuple>

#include "common/json_read.h"
#include "common/protocol.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// The object at `key`, or nullptr when it is absent or null.
StatusOr<const json*> OptionalObject(const json& parent, const std::string& where,
                                     const char* key) {
  const auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return static_cast<const json*>(nullptr);
  if (!it->is_object()) {
    return InvalidArgument(where + "." + key + ": must be an object, got " + ShownValue(*it));
  }
  return &*it;
}

StatusOr<std::optional<std::string>> ReadCapabilityText(const json& object,
                                                        const std::string& where, const char* key) {
  return ReadOptionalText(object, where, key, kMaxCapabilityText);
}

StatusOr<NullableText> ReadNullableText(const json& object, const std::string& where,
                                        const char* key) {
  NullableText out;
  out.sent = object.contains(key);
  ASSIGN_OR_RETURN(out.text, ReadCapabilityText(object, where, key));
  return out;
}

StatusOr<std::optional<int64_t>> ReadCount(const json& object, const std::string& where,
                                           const char* key) {
  return ReadOptionalInteger(object, where, key, kAtLeastZero);
}

// The array at `key` with each element read by read(element, its path, its position);
// nullopt when the member is absent or null.
template <typename T, typename Read>
StatusOr<std::optional<std::vector<T>>> ReadOptionalList(const json& object,
                                                         const std::string& where, const char* key,
                                                         Read read) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::vector<T>>();
  const std::string at = where + "." + key;
  if (!it->is_array()) return InvalidArgument(at + ": must be an array, got " + ShownValue(*it));
  std::vector<T> out;
  for (size_t i = 0; i < it->size(); ++i) {
    ASSIGN_OR_RETURN(T item,
                     read((*it)[i], at + "[" + std::to_string(i) + "]", static_cast<int64_t>(i)));
    out.push_back(std::move(item));
  }
  return std::optional<std::vector<T>>(std::move(out));
}

StatusOr<std::optional<std::vector<GpuInfo>>> ReadGpus(const json& object, const std::string& where,
                                                       const char* key) {
  return ReadOptionalList<GpuInfo>(object, where, key, GpuInfo::FromJson);
}

// An element of a list of texts ("capabilities.torch.quantized_engines[0]").
StatusOr<std::string> TextItem(const json& item, const std::string& at, int64_t) {
  if (!item.is_string()) return InvalidArgument(at + ": must be a string, got " + ShownValue(item));
  if (item.get_ref<const std::string&>().size() > kMaxCapabilityText) {
    return InvalidArgument(at + ": longer than " + std::to_string(kMaxCapabilityText) + " bytes");
  }
  return item.get<std::string>();
}

json GpusJson(const std::vector<GpuInfo>& gpus) {
  json out = json::array();
  for (const GpuInfo& gpu : gpus) out.push_back(gpu.ToJson());
  return out;
}

// A member is written when it is set; a NullableText when it was sent.
template <typename T>
void Put(json* out, const char* key, const std::optional<T>& value) {
  if (value) (*out)[key] = *value;
}
void Put(json* out, const char* key, const std::optional<std::vector<GpuInfo>>& gpus) {
  if (gpus) (*out)[key] = GpusJson(*gpus);
}
void Put(json* out, const char* key, const NullableText& value) {
  if (value.sent) (*out)[key] = value.text ? json(*value.text) : json(nullptr);
}

}  // namespace

bool NullableText::operator==(const NullableText& other) const {
  return sent == other.sent && text == other.text;
}

// ---- GpuInfo ----

bool GpuInfo::operator==(const GpuInfo& other) const {
  return std::tie(index, name, memory_mb) == std::tie(other.index, other.name, other.memory_mb);
}

json GpuInfo::ToJson() const {
  json out = {{"index", index}, {"name", name}};
  Put(&out, "memory_mb", memory_mb);
  return out;
}

StatusOr<GpuInfo> GpuInfo::FromJson(const json& gpu, const std::string& where, int64_t position) {
  if (!gpu.is_object())
    return InvalidArgument(where + ": must be an object, got " + ShownValue(gpu));
  GpuInfo out;
  ASSIGN_OR_RETURN(out.index, ReadIntegerOr(gpu, where, "index", kAtLeastZero, position));
  ASSIGN_OR_RETURN(std::optional<std::string> name, ReadCapabilityText(gpu, where, "name"));
  out.name = name.value_or("");
  const auto memory = gpu.find("memory_mb");
  if (memory != gpu.end() && !memory->is_null()) {
    if (!memory->is_number() || memory->get<double>() < 0) {
      return InvalidArgument(where + ".memory_mb: must be a number >= 0, got " +
                             ShownValue(*memory));
    }
    out.memory_mb = memory->get<double>();
  }
  return out;
}

// ---- HostFacts ----

bool HostFacts::operator==(const HostFacts& other) const {
  return std::tie(hostname, machine_id, cpu_model, logical_cpus, allowed_cpus, memory_mb, kernel,
                  arch, os, nvidia_driver, benchfleet_version) ==
         std::tie(other.hostname, other.machine_id, other.cpu_model, other.logical_cpus,
                  other.allowed_cpus, other.memory_mb, other.kernel, other.arch, other.os,
                  other.nvidia_driver, other.benchfleet_version);
}

json HostFacts::ToJson() const {
  json out = json::object();
  Put(&out, "hostname", hostname);
  Put(&out, "machine_id", machine_id);
  Put(&out, "cpu_model", cpu_model);
  Put(&out, "logical_cpus", logical_cpus);
  Put(&out, "allowed_cpus", allowed_cpus);
  Put(&out, "memory_mb", memory_mb);
  Put(&out, "kernel", kernel);
  Put(&out, "arch", arch);
  Put(&out, "os", os);
  Put(&out, "nvidia_driver", nvidia_driver);
  Put(&out, "benchfleet_version", benchfleet_version);
  return out;
}

StatusOr<HostFacts> HostFacts::FromJson(const json& host, const std::string& where) {
  if (!host.is_object())
    return InvalidArgument(where + ": must be an object, got " + ShownValue(host));
  HostFacts out;
  ASSIGN_OR_RETURN(out.hostname, ReadCapabilityText(host, where, "hostname"));
  ASSIGN_OR_RETURN(out.machine_id, ReadCapabilityText(host, where, "machine_id"));
  ASSIGN_OR_RETURN(out.cpu_model, ReadCapabilityText(host, where, "cpu_model"));
  ASSIGN_OR_RETURN(out.logical_cpus, ReadCount(host, where, "logical_cpus"));
  ASSIGN_OR_RETURN(out.allowed_cpus, ReadCapabilityText(host, where, "allowed_cpus"));
  ASSIGN_OR_RETURN(out.memory_mb, ReadCount(host, where, "memory_mb"));
  ASSIGN_OR_RETURN(out.kernel, ReadCapabilityText(host, where, "kernel"));
  ASSIGN_OR_RETURN(out.arch, ReadCapabilityText(host, where, "arch"));
  ASSIGN_OR_RETURN(out.os, ReadCapabilityText(host, where, "os"));
  ASSIGN_OR_RETURN(out.nvidia_driver, ReadNullableText(host, where, "nvidia_driver"));
  ASSIGN_OR_RETURN(out.benchfleet_version, ReadCapabilityText(host, where, "benchfleet_version"));
  return out;
}

// ---- TorchFacts ----

bool TorchFacts::operator==(const TorchFacts& other) const {
  return std::tie(torch_version, blas, blas_config, blas_threading, onednn, openmp, parallel_info,
                  cuda_available, cuda_device_count, cuda_version, cudnn_version, gpus,
                  quantized_engines, blas_version, mkl_version, onednn_version, mkl_path,
                  techniques, worker_path) ==
         std::tie(other.torch_version, other.blas, other.blas_config, other.blas_threading,
                  other.onednn, other.openmp, other.parallel_info, other.cuda_available,
                  other.cuda_device_count, other.cuda_version, other.cudnn_version, other.gpus,
                  other.quantized_engines, other.blas_version, other.mkl_version,
                  other.onednn_version, other.mkl_path, other.techniques, other.worker_path);
}

json TorchFacts::ToJson() const {
  json out = json::object();
  Put(&out, "torch_version", torch_version);
  Put(&out, "blas", blas);
  Put(&out, "blas_config", blas_config);
  Put(&out, "blas_threading", blas_threading);
  Put(&out, "onednn", onednn);
  Put(&out, "openmp", openmp);
  Put(&out, "parallel_info", parallel_info);
  Put(&out, "cuda_available", cuda_available);
  Put(&out, "cuda_device_count", cuda_device_count);
  Put(&out, "cuda_version", cuda_version);
  Put(&out, "cudnn_version", cudnn_version);
  Put(&out, "gpus", gpus);
  Put(&out, "quantized_engines", quantized_engines);
  Put(&out, "blas_version", blas_version);
  Put(&out, "mkl_version", mkl_version);
  Put(&out, "onednn_version", onednn_version);
  Put(&out, "mkl_path", mkl_path);
  Put(&out, "techniques", techniques);
  Put(&out, "worker_path", worker_path);
  return out;
}

StatusOr<TorchFacts> TorchFacts::FromJson(const json& torch, const std::string& where) {
  if (!torch.is_object())
    return InvalidArgument(where + ": must be an object, got " + ShownValue(torch));
  TorchFacts out;
  ASSIGN_OR_RETURN(out.torch_version, ReadCapabilityText(torch, where, "torch_version"));
  ASSIGN_OR_RETURN(out.blas, ReadCapabilityText(torch, where, "blas"));
  ASSIGN_OR_RETURN(out.blas_config, ReadNullableText(torch, where, "blas_config"));
  ASSIGN_OR_RETURN(out.blas_threading, ReadNullableText(torch, where, "blas_threading"));
  ASSIGN_OR_RETURN(out.onednn, ReadOptionalFlag(torch, where, "onednn"));
  ASSIGN_OR_RETURN(out.openmp, ReadOptionalFlag(torch, where, "openmp"));
  ASSIGN_OR_RETURN(out.parallel_info,
                   ReadOptionalText(torch, where, "parallel_info", kMaxParallelInfoText));
  ASSIGN_OR_RETURN(out.cuda_available, ReadOptionalFlag(torch, where, "cuda_available"));
  ASSIGN_OR_RETURN(out.cuda_device_count, ReadCount(torch, where, "cuda_device_count"));
  ASSIGN_OR_RETURN(out.cuda_version, ReadNullableText(torch, where, "cuda_version"));
  ASSIGN_OR_RETURN(out.cudnn_version, ReadNullableText(torch, where, "cudnn_version"));
  ASSIGN_OR_RETURN(out.gpus, ReadGpus(torch, where, "gpus"));
  ASSIGN_OR_RETURN(out.quantized_engines,
                   ReadOptionalList<std::string>(torch, where, "quantized_engines", TextItem));
  ASSIGN_OR_RETURN(out.blas_version, ReadNullableText(torch, where, "blas_version"));
  ASSIGN_OR_RETURN(out.mkl_version, ReadNullableText(torch, where, "mkl_version"));
  ASSIGN_OR_RETURN(out.onednn_version, ReadNullableText(torch, where, "onednn_version"));
  ASSIGN_OR_RETURN(out.mkl_path, ReadNullableText(torch, where, "mkl_path"));
  ASSIGN_OR_RETURN(out.techniques,
                   ReadOptionalList<std::string>(torch, where, "techniques", TextItem));
  ASSIGN_OR_RETURN(out.worker_path, ReadCapabilityText(torch, where, "worker_path"));
  return out;
}

// ---- Capabilities ----

std::vector<TorchFacts> Capabilities::Workers() const {
  return workers.empty() ? std::vector<TorchFacts>{torch} : workers;
}

json Capabilities::ToJson() const {
  json out = {
      {"host", host.ToJson()}, {"torch", torch.ToJson()}, {"gpus", GpusJson(gpus)}, {"cpus", cpus}};
  if (cpu_shape) {
    out["cpu_shape"] = {{"cpus", cpu_shape->cpus},
                        {"cores", cpu_shape->cores},
                        {"threads_per_core", cpu_shape->threads_per_core},
                        {"largest_node", cpu_shape->largest_node}};
  }
  if (!workers.empty()) {
    out["workers"] = json::array();
    for (const TorchFacts& worker : workers) out["workers"].push_back(worker.ToJson());
  }
  return out;
}

StatusOr<Capabilities> Capabilities::FromJson(const json& capabilities) {
  const std::string where = "capabilities";
  if (!capabilities.is_object()) {
    return InvalidArgument(where + ": must be an object, got " + ShownValue(capabilities));
  }
  Capabilities out;
  ASSIGN_OR_RETURN(const json* host, OptionalObject(capabilities, where, "host"));
  if (host != nullptr) {
    ASSIGN_OR_RETURN(out.host, HostFacts::FromJson(*host, where + ".host"));
  }
  ASSIGN_OR_RETURN(const json* torch, OptionalObject(capabilities, where, "torch"));
  if (torch != nullptr) {
    ASSIGN_OR_RETURN(out.torch, TorchFacts::FromJson(*torch, where + ".torch"));
  }
  ASSIGN_OR_RETURN(
      std::optional<std::vector<TorchFacts>> workers,
      ReadOptionalList<TorchFacts>(capabilities, where, "workers",
                                   [](const json& worker, const std::string& at, int64_t) {
                                     return TorchFacts::FromJson(worker, at);
                                   }));
  out.workers = std::move(workers).value_or(std::vector<TorchFacts>());
  if (out.workers.size() > kMaxAgentWorkers) {
    return InvalidArgument(where + ".workers: at most " + std::to_string(kMaxAgentWorkers) +
                           " workers, got " + std::to_string(out.workers.size()));
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<GpuInfo>> gpus, ReadGpus(capabilities, where, "gpus"));
  out.gpus = std::move(gpus).value_or(std::vector<GpuInfo>());
  ASSIGN_OR_RETURN(std::optional<std::string> cpus,
                   ReadCapabilityText(capabilities, where, "cpus"));
  out.cpus = cpus.value_or("");
  ASSIGN_OR_RETURN(const json* shape, OptionalObject(capabilities, where, "cpu_shape"));
  if (shape != nullptr) {
    const std::string at = where + ".cpu_shape";
    CpuShape read;
    ASSIGN_OR_RETURN(read.cpus, ReadInteger(*shape, at, "cpus", kAtLeastOne));
    ASSIGN_OR_RETURN(read.cores, ReadInteger(*shape, at, "cores", IntegerRange{1, read.cpus}));
    ASSIGN_OR_RETURN(read.threads_per_core,
                     ReadInteger(*shape, at, "threads_per_core", IntegerRange{1, read.cpus}));
    ASSIGN_OR_RETURN(read.largest_node,
                     ReadInteger(*shape, at, "largest_node", IntegerRange{1, read.cpus}));
    out.cpu_shape = read;
  }
  out.raw = capabilities;
  return out;
}

std::optional<size_t> PickWorker(const std::vector<TorchFacts>& workers, const WorkerNeeds& needs) {
  for (size_t i = 0; i < workers.size(); ++i) {
    const TorchFacts& worker = workers[i];
    const std::vector<std::string> techniques =
        worker.techniques.value_or(std::vector<std::string>{"eager"});
    if (needs.SatisfiedBy(worker.torch_version.value_or(""), techniques)) return i;
  }
  return std::nullopt;
}

std::string DescribeTorchVersions(const std::vector<TorchFacts>& workers) {
  std::string out;
  for (const TorchFacts& worker : workers) {
    out += (out.empty() ? "" : ", ") + worker.torch_version.value_or("(unknown)");
  }
  return out;
}

}  // namespace benchfleet
