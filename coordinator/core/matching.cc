#include "coordinator/core/matching.h"

#include <algorithm>
#include <cstdlib>

#include "common/cpu_list.h"
#include "common/thread_placement.h"

namespace benchfleet {
namespace {

std::vector<std::string> AsList(const json& value) {
  if (value.is_string()) return {value.get<std::string>()};
  std::vector<std::string> out;
  if (value.is_array()) {
    for (const auto& v : value) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string Text(const json& select, const char* key) {
  auto it = select.find(key);
  return it != select.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool AgentMatches(const json& select, const AgentDescription& agent) {
  if (!select.is_object()) return false;
  const Capabilities& caps = agent.capabilities;
  if (Text(select, "device") == "cuda" && caps.gpus.empty()) return false;
  if (select.contains("name") && !Contains(AsList(select["name"]), agent.name)) return false;
  if (select.contains("tags")) {
    for (const auto& tag : AsList(select["tags"])) {
      if (!Contains(agent.tags, tag)) return false;
    }
  }
  if (select.contains("cpu_model") &&
      caps.host.cpu_model.value_or("").find(Text(select, "cpu_model")) == std::string::npos) {
    return false;
  }
  if (!PickWorker(caps.Workers(), WorkerNeedsOfSelect(select))) return false;
  if (!CanPlaceThreads(select, agent)) return false;
  if (const auto versus = select.find(kVersusSelectKey);
      versus != select.end() && versus->is_object()) {
    if (!PickWorker(caps.Workers(), WorkerNeedsOfSelect(*versus))) return false;
    // An agent that did not say its CPUs is taken to have them, and refuses the duet itself.
    const json cpus = versus->value("cpus", json(0));
    const StatusOr<std::vector<int>> has = ParseCpuList(caps.cpus);
    if (cpus.is_number_integer() && cpus.get<int64_t>() > 0 && has.ok() && !has->empty() &&
        static_cast<int64_t>(has->size()) < cpus.get<int64_t>()) {
      return false;
    }
  }
  if (select.contains("gpu_model")) {
    const std::string wanted = Text(select, "gpu_model");
    if (std::none_of(caps.gpus.begin(), caps.gpus.end(), [&](const GpuInfo& gpu) {
          return gpu.name.find(wanted) != std::string::npos;
        })) {
      return false;
    }
  }
  return true;
}

bool CanPlaceThreads(const json& select, const AgentDescription& agent) {
  const auto it = select.find(kThreadPlacementKey);
  if (it == select.end() || !it->is_object()) return true;
  const auto policy = it->find("policy");
  const auto threads = it->find("threads");
  if (policy == it->end() || !policy->is_string() || threads == it->end() ||
      !threads->is_number_integer()) {
    return true;  // not one this coordinator wrote: the agent decides
  }
  const std::optional<CpuShape>& shape = agent.capabilities.cpu_shape;
  return !shape ||
         PlacementRefusal(*shape, threads->get<int64_t>(), policy->get<std::string>()).empty();
}

json SelectWithThreadPlacement(const json& select, const json& spec) {
  json out = select.is_object() ? select : json::object();
  const std::string policy = JobThreadPlacement(spec);
  if (policy == kDefaultThreadPlacement) return out;
  const auto threads = spec.find("threads");
  out[kThreadPlacementKey] = {
      {"policy", policy},
      {"threads",
       threads != spec.end() && threads->is_number_integer() ? threads->get<int64_t>() : 1}};
  return out;
}

json SelectWithWorker(const json& select, const WorkerNeeds& worker) {
  json out = select.is_object() ? select : json::object();
  if (!worker.torch.empty()) out["torch"] = worker.torch;
  if (!worker.torch_min.empty()) out["torch_min"] = worker.torch_min;
  if (!worker.technique.empty()) out["technique"] = worker.technique;
  return out;
}

json SelectWithVersus(const json& select, const WorkerNeeds& side_b, int64_t duet_cpus) {
  json out = select.is_object() ? select : json::object();
  json versus = SelectWithWorker(json::object(), side_b);
  if (duet_cpus > 0) versus["cpus"] = duet_cpus;
  out[kVersusSelectKey] = std::move(versus);
  return out;
}

WorkerNeeds WorkerNeedsOfSelect(const json& select) {
  WorkerNeeds worker;
  if (!select.is_object()) return worker;
  worker.torch = Text(select, "torch");
  worker.torch_min = Text(select, "torch_min");
  worker.technique = Text(select, "technique");
  return worker;
}

int64_t GpusNeeded(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return 0;
  if (device.size() <= 5) return 1;  // "cuda"
  return std::strtoll(device.c_str() + 5, nullptr, 10) + 1;
}

bool AgentCanRun(const JobRequirement& requirement, const AgentDescription& agent) {
  if (!requirement.pinned_host.empty()) {
    if (requirement.pinned_host != agent.name) return false;
  } else if (!AgentMatches(requirement.select, agent)) {
    return false;
  }
  return static_cast<int64_t>(agent.capabilities.gpus.size()) >= GpusNeeded(requirement.device);
}

std::string DescribeRequirement(const JobRequirement& requirement) {
  std::string out;
  auto add = [&](const std::string& key, const std::string& value) {
    out += (out.empty() ? "" : ", ") + key + ": " + value;
  };
  if (!requirement.pinned_host.empty()) add("agent", requirement.pinned_host);
  if (requirement.select.is_object()) {
    for (const auto& [key, value] : requirement.select.items()) {
      add(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  if (GpusNeeded(requirement.device) > 0) {
    add("gpus", ">= " + std::to_string(GpusNeeded(requirement.device)) + " (device " +
                    requirement.device + ")");
  }
  if (requirement.kind == "calibration") add("kind", "calibration");
  return "{" + out + "}";
}

}  // namespace benchfleet
