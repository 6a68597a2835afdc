#include "agent/thread_placement.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/cpu_list.h"
#include "common/files.h"
#include "common/thread_placement.h"

namespace benchfleet {
namespace {

std::optional<int> ReadNumber(const std::string& path) {
  const StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return std::nullopt;
  try {
    return std::stoi(*text);
  } catch (...) {
    return std::nullopt;
  }
}

ThreadPlacement Describe(const CpuTopology& topology, std::string policy, std::vector<int> cpus) {
  ThreadPlacement out;
  out.policy = std::move(policy);
  std::set<int> cores, nodes;
  for (int id : cpus) {
    for (const CpuTopology::Cpu& cpu : topology.cpus) {
      if (cpu.id != id) continue;
      if (!cores.insert(cpu.core).second) out.smt_shared = true;
      nodes.insert(cpu.node);
    }
  }
  out.cores = static_cast<int>(cores.size());
  out.nodes = static_cast<int>(nodes.size());
  out.cpus = std::move(cpus);
  return out;
}

// Each core's CPUs, the cores in the order their first CPU comes in `cpus`.
std::vector<std::vector<const CpuTopology::Cpu*>> ByCore(
    const std::vector<CpuTopology::Cpu>& cpus) {
  std::vector<std::vector<const CpuTopology::Cpu*>> cores;
  std::map<int, size_t> index;
  for (const CpuTopology::Cpu& cpu : cpus) {
    auto [it, fresh] = index.try_emplace(cpu.core, cores.size());
    if (fresh) cores.emplace_back();
    cores[it->second].push_back(&cpu);
  }
  return cores;
}

// One CPU of each core first, then each core's next hardware thread, and so on.
std::vector<int> CoresFirst(const std::vector<std::vector<const CpuTopology::Cpu*>>& cores) {
  std::vector<int> out;
  for (size_t level = 0;; ++level) {
    bool any = false;
    for (const auto& core : cores) {
      if (level < core.size()) {
        out.push_back(core[level]->id);
        any = true;
      }
    }
    if (!any) return out;
  }
}

}  // namespace

CpuShape CpuTopology::Shape() const {
  CpuShape shape;
  shape.cpus = static_cast<int64_t>(cpus.size());
  std::map<int, int64_t> per_core, per_node;
  for (const Cpu& cpu : cpus) {
    shape.threads_per_core = std::max(shape.threads_per_core, ++per_core[cpu.core]);
    shape.largest_node = std::max(shape.largest_node, ++per_node[cpu.node]);
  }
  shape.cores = static_cast<int64_t>(per_core.size());
  return shape;
}

CpuTopology ReadCpuTopology(const std::vector<int>& cpus, const std::string& root) {
  CpuTopology topology;
  std::map<int, int> node_of;
  // Every node the kernel lists (none without NUMA support: every CPU on node 0).
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(root + "/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 || name.size() > 9 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    const StatusOr<std::string> list = ReadWholeFile(entry.path().string() + "/cpulist");
    if (!list.ok()) continue;
    const auto parsed = ParseCpuList(list->substr(0, list->find_last_not_of(" \n") + 1));
    if (!parsed.ok()) continue;
    for (int cpu : *parsed) node_of[cpu] = std::stoi(name.substr(4));
  }
  // A core is (package, core_id); its number here is its first CPU's id, unique per core.
  std::map<std::pair<int, int>, int> core_number;
  for (int id : cpus) {
    const std::string dir =
        root + "/sys/devices/system/cpu/cpu" + std::to_string(id) + "/topology/";
    CpuTopology::Cpu cpu;
    cpu.id = id;
    const std::optional<int> core_id = ReadNumber(dir + "core_id");
    cpu.package = ReadNumber(dir + "physical_package_id").value_or(0);
    cpu.core = core_id ? core_number.try_emplace({cpu.package, *core_id}, id).first->second : id;
    cpu.node = node_of.count(id) ? node_of[id] : 0;
    topology.cpus.push_back(cpu);
  }
  return topology;
}

nlohmann::json ThreadPlacement::ToJson() const {
  return {{"policy", policy},
          {"cpus", FormatCpuList(cpus)},
          {"cores", cores},
          {"nodes", nodes},
          {"smt_shared", smt_shared}};
}

StatusOr<ThreadPlacement> PlaceThreads(const CpuTopology& topology, int threads,
                                       const std::string& policy) {
  std::vector<int> all;
  for (const CpuTopology::Cpu& cpu : topology.cpus) all.push_back(cpu.id);
  const size_t n = static_cast<size_t>(std::max(threads, 1));
  const auto cores = ByCore(topology.cpus);
  auto first = [&](std::vector<int> order) {
    order.resize(std::min(order.size(), n));
    return Describe(topology, policy, std::move(order));
  };
  // What this agent cannot give is refused by the rule the coordinator refuses a sweep
  // by at submit (common/thread_placement.h), with the same words.
  if (const std::string refusal = PlacementRefusal(topology.Shape(), threads, policy);
      !refusal.empty()) {
    return FailedPrecondition(refusal);
  }
  // The kernel's choice, or as many threads as CPUs or more (an oversubscription
  // measurement): every CPU of the agent.
  if (policy == "os" || (policy == "cores" && n >= all.size()))
    return Describe(topology, policy, all);
  if (policy == "cores") return first(CoresFirst(cores));
  if (policy == "spread") {
    // Cores taken in turn from each (node, package): the farthest apart first.
    std::map<std::pair<int, int>, std::vector<int>> groups;
    for (const auto& core : cores) groups[{core[0]->node, core[0]->package}].push_back(core[0]->id);
    std::vector<int> order;
    for (size_t level = 0; order.size() < cores.size(); ++level) {
      for (const auto& [group, ids] : groups) {
        if (level < ids.size()) order.push_back(ids[level]);
      }
    }
    return first(order);
  }
  if (policy == "smt") {
    std::vector<int> order;
    for (const auto& core : cores) {
      for (const CpuTopology::Cpu* cpu : core) order.push_back(cpu->id);
    }
    return first(order);
  }
  if (policy == "node") {
    std::map<int, std::vector<CpuTopology::Cpu>> nodes;
    for (const CpuTopology::Cpu& cpu : topology.cpus) nodes[cpu.node].push_back(cpu);
    const auto largest = std::max_element(
        nodes.begin(), nodes.end(),
        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    return first(CoresFirst(ByCore(largest->second)));
  }
  return InvalidArgument("thread_placement \"" + policy +
                         "\": unknown; known: cores, spread, smt, node, os");
}

}  // namespace benchfleet
