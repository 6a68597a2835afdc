#include "common/job_needs.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/json_read.h"

namespace benchfleet {

using json = nlohmann::json;

bool WorkerNeeds::operator==(const WorkerNeeds& other) const {
  return torch == other.torch && torch_min == other.torch_min && technique == other.technique;
}

bool WorkerNeeds::SatisfiedBy(const std::string& torch_version,
                              const std::vector<std::string>& techniques) const {
  if (!TorchVersionMatches(torch, torch_version)) return false;
  if (!torch_min.empty() && CompareTorchVersions(torch_version, torch_min) < 0) return false;
  return technique.empty() ||
         std::find(techniques.begin(), techniques.end(), technique) != techniques.end();
}

std::string WorkerNeeds::Describe() const {
  std::string out;
  auto add = [&](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  if (!torch.empty()) add("torch " + torch);
  if (!torch_min.empty()) add("torch >= " + torch_min);
  if (!technique.empty()) add("technique " + technique);
  return out;
}

bool JobNeeds::operator==(const JobNeeds& other) const {
  return world_size == other.world_size && spread == other.spread &&
         local_processes == other.local_processes && replicated == other.replicated &&
         local_cpus == other.local_cpus && worker == other.worker;
}

// What NeedsOf reads of the worker: straight from the JSON (a job's `torch` and
// `technique` values, checked by ParseJobConfig before any job is stored), so that a
// plain job is not parsed again for them.
WorkerNeeds WorkerNeedsOfJson(const json& spec) {
  WorkerNeeds worker;
  if (const auto torch = spec.find("torch"); torch != spec.end() && torch->is_string()) {
    worker.torch = torch->get<std::string>();
  }
  if (const auto technique = spec.find("technique");
      technique != spec.end() && technique->is_string() && *technique != "eager") {
    worker.technique = technique->get<std::string>();
  }
  if (spec.value("model", json()) == json("aoti")) worker.technique = "aoti";
  return worker;
}

JobNeeds NeedsOf(const JobSpec& spec) {
  JobNeeds needs;
  needs.world_size = JobWorldSize(spec);
  // A rank that already has its `distributed` object is one process wherever it runs.
  needs.spread = spec.spread && needs.world_size > 1 && !spec.distributed;
  needs.replicated = spec.replicas > 1;
  if (needs.replicated) {
    needs.local_processes = spec.replicas;  // replicas always share one agent
  } else if (!needs.spread && !spec.distributed) {
    needs.local_processes = needs.world_size;
  }
  if (needs.local_processes > 1) needs.local_cpus = needs.local_processes * spec.threads;
  needs.worker.torch = spec.torch;
  if (spec.technique != "eager") needs.worker.technique = spec.technique;
  if (spec.model == "aoti") needs.worker.technique = "aoti";
  return needs;
}

StatusOr<JobNeeds> NeedsOfJobJson(const json& spec) {
  if (!spec.is_object()) return InvalidArgument("job spec: must be an object");
  const bool more_than_one = spec.contains("parallel") || spec.contains("distributed") ||
                             spec.contains("replicas") ||
                             IsCollectiveModel(spec.value("model", ""));
  if (!more_than_one) {
    JobNeeds needs;
    needs.worker = WorkerNeedsOfJson(spec);
    return needs;
  }
  JobSpecError error;
  std::optional<JobSpec> checked = ParseJobConfig(spec, &error);
  if (!checked) return InvalidArgument(error.field + ": " + error.message);
  return NeedsOf(*checked);
}

json JobNeeds::ToJson() const {
  json out = {{"world_size", world_size},
              {"spread", spread},
              {"local_processes", local_processes},
              {"replicated", replicated},
              {"local_cpus", local_cpus}};
  // Written when asked for: an offer that asks nothing of the worker reads as before.
  if (!worker.torch.empty()) out["torch"] = worker.torch;
  if (!worker.torch_min.empty()) out["torch_min"] = worker.torch_min;
  if (!worker.technique.empty()) out["technique"] = worker.technique;
  return out;
}

StatusOr<JobNeeds> JobNeeds::FromJson(const json& needs, const std::string& field) {
  if (!needs.is_object()) return InvalidArgument(field + ": must be an object");
  JobNeeds out;
  ASSIGN_OR_RETURN(out.world_size, ReadInteger(needs, field, "world_size", {1, kMaxWorldSize}));
  ASSIGN_OR_RETURN(out.spread, ReadFlag(needs, field, "spread"));
  ASSIGN_OR_RETURN(out.local_processes,
                   ReadInteger(needs, field, "local_processes", {1, kMaxWorldSize}));
  ASSIGN_OR_RETURN(out.replicated, ReadFlag(needs, field, "replicated"));
  ASSIGN_OR_RETURN(out.local_cpus,
                   ReadInteger(needs, field, "local_cpus", {0, kMaxWorldSize * kMaxJobThreads}));
  for (auto [key, into] :
       {std::pair<const char*, std::string*>("torch", &out.worker.torch),
        std::pair<const char*, std::string*>("torch_min", &out.worker.torch_min)}) {
    ASSIGN_OR_RETURN(std::optional<std::string> version,
                     ReadOptionalText(needs, field, key, kMaxTorchVersionLength));
    *into = version.value_or("");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> technique,
                   ReadOptionalText(needs, field, "technique", 32));
  out.worker.technique = technique.value_or("");
  if (!out.worker.technique.empty() && std::find(KnownTechniques().begin(), KnownTechniques().end(),
                                                 out.worker.technique) == KnownTechniques().end()) {
    return InvalidArgument(
        field + ".technique: must be one of eager, torchscript, aoti, cuda_graph, got \"" +
        out.worker.technique + "\"");
  }
  if (out.spread && (out.world_size < 2 || out.local_processes != 1)) {
    return InvalidArgument(field +
                           ": a spread gang has world_size >= 2 and one local process per agent");
  }
  if (out.local_processes > 1 && out.local_processes != out.world_size && !out.replicated) {
    return InvalidArgument(field + ".local_processes: a gang on one agent runs its world_size (" +
                           std::to_string(out.world_size) + ") ranks there, got " +
                           std::to_string(out.local_processes));
  }
  if ((out.local_processes > 1) != (out.local_cpus > 0)) {
    return InvalidArgument(field + ".local_cpus: must be > 0 exactly when local_processes > 1");
  }
  return out;
}

}  // namespace benchfleet
