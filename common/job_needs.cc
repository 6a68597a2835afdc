#include "common/job_needs.h"

#include "common/json_read.h"

namespace benchfleet {

using json = nlohmann::json;

bool JobNeeds::operator==(const JobNeeds& other) const {
  return world_size == other.world_size && spread == other.spread &&
         local_processes == other.local_processes && replicated == other.replicated &&
         local_cpus == other.local_cpus;
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
  return needs;
}

StatusOr<JobNeeds> NeedsOfJobJson(const json& spec) {
  if (!spec.is_object()) return InvalidArgument("job spec: must be an object");
  const bool more_than_one = spec.contains("parallel") || spec.contains("distributed") ||
                             spec.contains("replicas") || IsCollectiveModel(spec.value("model", ""));
  if (!more_than_one) return JobNeeds{};
  JobSpecError error;
  std::optional<JobSpec> checked = ParseJobConfig(spec, &error);
  if (!checked) return InvalidArgument(error.field + ": " + error.message);
  return NeedsOf(*checked);
}

json JobNeeds::ToJson() const {
  return {{"world_size", world_size},
          {"spread", spread},
          {"local_processes", local_processes},
          {"replicated", replicated},
          {"local_cpus", local_cpus}};
}

StatusOr<JobNeeds> JobNeeds::FromJson(const json& needs, const std::string& field) {
  if (!needs.is_object()) return InvalidArgument(field + ": must be an object");
  JobNeeds out;
  ASSIGN_OR_RETURN(out.world_size, ReadInteger(needs, field, "world_size", {1, kMaxWorldSize}));
  ASSIGN_OR_RETURN(out.spread, ReadFlag(needs, field, "spread"));
  ASSIGN_OR_RETURN(out.local_processes, ReadInteger(needs, field, "local_processes", {1, kMaxWorldSize}));
  ASSIGN_OR_RETURN(out.replicated, ReadFlag(needs, field, "replicated"));
  ASSIGN_OR_RETURN(out.local_cpus,
                   ReadInteger(needs, field, "local_cpus", {0, kMaxWorldSize * kMaxJobThreads}));
  if (out.spread && (out.world_size < 2 || out.local_processes != 1)) {
    return InvalidArgument(field + ": a spread gang has world_size >= 2 and one local process per agent");
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
