#include "agent/allocation.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "common/cpu_list.h"

namespace benchfleet {
namespace {

std::optional<std::string> Get(const AllocationSources& sources, const std::string& name) {
  auto it = sources.env.find(name);
  if (it == sources.env.end()) return std::nullopt;
  return it->second;
}

// A count Slurm wrote ("2"); nullopt when it is not a whole number >= 0.
std::optional<int64_t> ParseCount(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 9) {
    return std::nullopt;
  }
  return std::stoll(text);
}

// SLURM_JOB_CPUS_PER_NODE: "4", or per node "4(x2),2". Its one value when every node
// has the same; nullopt otherwise (this node's cannot be told from it).
std::optional<int64_t> UniformCpusPerNode(const std::string& text) {
  std::optional<int64_t> value;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::optional<int64_t> count = ParseCount(item.substr(0, item.find('(')));
    if (!count || (value && *value != *count)) return std::nullopt;
    value = count;
  }
  return value;
}

// "0,1" -> {"0", "1"}; "" -> {}.
std::vector<std::string> DeviceList(const std::string& text) {
  std::vector<std::string> devices;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) devices.push_back(item);
  }
  return devices;
}

std::string Plural(int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Where the usable CPUs came from: "affinity 0-3, cpuset 0-7 (/sys/fs/cgroup/...)".
std::string CpuSources(const AllocationSources& sources) {
  std::string text = "affinity " + FormatCpuList(sources.affinity);
  if (sources.cpuset) {
    text += ", cpuset " +
            (sources.cpuset->cpus.empty() ? "empty" : FormatCpuList(sources.cpuset->cpus)) + " (" +
            sources.cpuset->file + ")";
  }
  return text;
}

StatusOr<int64_t> CpusOnNode(const AllocationSources& sources, const std::string& job) {
  if (auto on_node = Get(sources, "SLURM_CPUS_ON_NODE")) {
    auto count = ParseCount(*on_node);
    if (!count) {
      return InvalidArgument(job + ": SLURM_CPUS_ON_NODE \"" + *on_node +
                             "\" is not a count of CPUs");
    }
    return *count;
  }
  if (auto per_node = Get(sources, "SLURM_JOB_CPUS_PER_NODE")) {
    if (auto count = UniformCpusPerNode(*per_node)) return *count;
    return InvalidArgument(job + ": SLURM_CPUS_ON_NODE is not set and SLURM_JOB_CPUS_PER_NODE \"" +
                           *per_node + "\" does not say how many CPUs this node has");
  }
  return InvalidArgument(job +
                         ": neither SLURM_CPUS_ON_NODE nor SLURM_JOB_CPUS_PER_NODE is set, so "
                         "the CPUs allocated on this node are unknown");
}

// The GPUs jobs may see: CUDA_VISIBLE_DEVICES as Slurm set it, else the allocated list,
// else none. More than allocated is refused (they would be another job's).
Status ResolveGpus(const AllocationSources& sources, SlurmAllocation* slurm) {
  std::optional<std::string> allocated_from;
  std::optional<std::string> allocated;
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if ((allocated = Get(sources, name))) {
      allocated_from = name;
      break;
    }
  }
  int64_t allocated_count = allocated ? static_cast<int64_t>(DeviceList(*allocated).size()) : 0;
  if (auto on_node = Get(sources, "SLURM_GPUS_ON_NODE")) {
    auto count = ParseCount(*on_node);
    if (!count) {
      return InvalidArgument("Slurm job " + slurm->job_id + ": SLURM_GPUS_ON_NODE \"" + *on_node +
                             "\" is not a count of GPUs");
    }
    allocated_count = *count;
  }
  const std::string job = "Slurm job " + slurm->job_id;
  if (auto visible = Get(sources, "CUDA_VISIBLE_DEVICES")) {
    const auto count = static_cast<int64_t>(DeviceList(*visible).size());
    if (count > allocated_count) {
      return FailedPrecondition(
          job + " was allocated " + Plural(allocated_count, "GPU") +
          " on this node, but CUDA_VISIBLE_DEVICES=\"" + *visible + "\" shows " +
          Plural(count, "GPU") +
          ": jobs would use GPUs that are not this job's (ask Slurm for them with --gpus, or "
          "unset CUDA_VISIBLE_DEVICES in the batch script)");
    }
    if (count < allocated_count) {
      slurm->warnings.push_back("CUDA_VISIBLE_DEVICES shows " + Plural(count, "GPU") + " of the " +
                                std::to_string(allocated_count) + " allocated; jobs use those");
    }
    slurm->visible_gpus = *visible;
    slurm->gpus_from = "CUDA_VISIBLE_DEVICES";
  } else if (allocated) {
    slurm->visible_gpus = *allocated;
    slurm->gpus_from = *allocated_from;
  } else if (allocated_count > 0) {
    return FailedPrecondition(job + ": SLURM_GPUS_ON_NODE says " + Plural(allocated_count, "GPU") +
                              " but neither CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS nor "
                              "SLURM_JOB_GPUS says which");
  } else {
    slurm->visible_gpus = "";
    slurm->gpus_from = "no GPU allocated";
  }
  return Status::Ok();
}

StatusOr<SlurmAllocation> ResolveSlurm(const AllocationSources& sources, const std::string& job_id,
                                       const std::vector<int>& usable) {
  SlurmAllocation slurm;
  slurm.job_id = job_id;
  const std::string job = "Slurm job " + job_id;
  ASSIGN_OR_RETURN(slurm.cpus_on_node, CpusOnNode(sources, job));
  if (slurm.cpus_on_node < 1) {
    return FailedPrecondition(job + " has no CPU allocated on this node (SLURM_CPUS_ON_NODE=" +
                              std::to_string(slurm.cpus_on_node) + ")");
  }
  const auto count = static_cast<int64_t>(usable.size());
  if (count > slurm.cpus_on_node) {
    return FailedPrecondition(
        job + " was allocated " + Plural(slurm.cpus_on_node, "CPU") +
        " on this node, but this process may run on " + Plural(count, "CPU") + " (" +
        CpuSources(sources) +
        "): the job is not bound to its CPUs, so which are its own cannot be told. Bind jobs "
        "to their CPUs (TaskPlugin=task/affinity or task/cgroup in slurm.conf), or ask for "
        "the whole node (sbatch --exclusive)");
  }
  if (count < slurm.cpus_on_node) {
    slurm.warnings.push_back("this process may run on " + Plural(count, "CPU") + " of the " +
                             std::to_string(slurm.cpus_on_node) + " allocated; jobs use those");
  }
  slurm.cpus = usable;
  RETURN_IF_ERROR(ResolveGpus(sources, &slurm));
  return slurm;
}

}  // namespace

const std::vector<std::string>& AllocationVariables() {
  static const std::vector<std::string> names = {
      "SLURM_JOB_ID",    "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_GPUS",
      "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE", "CUDA_VISIBLE_DEVICES"};
  return names;
}

StatusOr<AllocationSources> ReadAllocationSources() {
  AllocationSources sources;
  for (const std::string& name : AllocationVariables()) {
    if (const char* value = std::getenv(name.c_str())) sources.env[name] = value;
  }
  sources.affinity = AllowedCpus();
  ASSIGN_OR_RETURN(sources.cpuset, ReadOwnCgroupCpuset());
  return sources;
}

std::string SlurmAllocation::Describe() const {
  std::string text = "Slurm job " + job_id + ": " + Plural(cpus_on_node, "CPU") +
                     " allocated on this node, jobs run on CPU" + (cpus.size() == 1 ? " " : "s ") +
                     FormatCpuList(cpus) +
                     "; GPUs: " + (visible_gpus.empty() ? "none" : visible_gpus) + " (" +
                     gpus_from + ")";
  for (const std::string& warning : warnings) text += "; " + warning;
  return text;
}

StatusOr<AgentResources> ResolveResources(const AllocationSources& sources,
                                          const std::string& cpus_flag) {
  std::vector<int> usable;
  if (sources.cpuset) {
    std::set_intersection(sources.affinity.begin(), sources.affinity.end(),
                          sources.cpuset->cpus.begin(), sources.cpuset->cpus.end(),
                          std::back_inserter(usable));
  } else {
    usable = sources.affinity;
  }
  if (usable.empty()) {
    return FailedPrecondition("no CPU this process may run on: " + CpuSources(sources) +
                              " have none in common");
  }
  AgentResources resources;
  std::string usable_are = "the CPUs this process may run on (" + CpuSources(sources) + ")";
  if (auto job_id = Get(sources, "SLURM_JOB_ID"); job_id && !job_id->empty()) {
    ASSIGN_OR_RETURN(resources.slurm, ResolveSlurm(sources, *job_id, usable));
    usable_are = "Slurm job " + *job_id + "'s CPUs on this node (" + FormatCpuList(usable) + ")";
  }
  if (cpus_flag.empty()) {
    resources.cpus = usable;
    return resources;
  }
  auto parsed = ParseCpuList(cpus_flag);
  if (!parsed.ok()) return InvalidArgument("--cpus: " + parsed.status().message());
  for (int cpu : *parsed) {
    if (!std::binary_search(usable.begin(), usable.end(), cpu)) {
      return InvalidArgument("--cpus " + cpus_flag + ": CPU " + std::to_string(cpu) +
                             " is not among " + usable_are + "; the agent may not use it");
    }
  }
  resources.cpus = *parsed;
  return resources;
}

}  // namespace benchfleet
