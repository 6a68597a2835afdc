// What a job asks of the fleet: how many processes, on how many agents, with how many
// CPUs on one agent. Computed once, from the checked spec, when the job is stored
// (JobQueue keeps it in the job's row), read from there by the dispatcher and carried
// in the job's offer to the agent, which starts that many processes. No hop after
// intake reads the spec for it (docs/architecture.md, the life of a job).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/job_spec.h"
#include "common/status.h"

namespace benchfleet {

struct JobNeeds {
  // The ranks of a gang (parallel or collective jobs, JobWorldSize); 1 for one process
  // or independent replicas.
  int64_t world_size = 1;
  // Each rank on an agent of its own (placement "spread"): the job waits for
  // world_size matching agents to be free at once.
  bool spread = false;
  // The worker processes an agent starts for it: the replicas, or a gang's ranks when
  // it runs on one agent; 1 for one process or one rank of a spread gang.
  int64_t local_processes = 1;
  // Those processes are independent copies (`replicas`), not ranks.
  bool replicated = false;
  // CPUs those processes need together on one agent, one per thread of each; 0 for a
  // job of one process, whose threads the agent fits as it can.
  int64_t local_cpus = 0;

  // The agents a job needs at once: world_size for a spread gang, else 1.
  int64_t Agents() const { return spread ? world_size : 1; }
  bool operator==(const JobNeeds& other) const;

  // The job offer's `needs` object (schemas/protocol.md).
  nlohmann::json ToJson() const;
  // `field` names the object in messages ("job.needs"). Refuses a value out of range
  // by name, and needs that contradict each other.
  static StatusOr<JobNeeds> FromJson(const nlohmann::json& needs, const std::string& field);
};

// The needs of a checked spec: the one rule.
JobNeeds NeedsOf(const JobSpec& spec);

// The needs of a job's JSON as a sweep expands it (checked by ParseJobConfig before it
// is stored): only a spec that asks for more than one process (`parallel`,
// `distributed`, `replicas` or a spread placement) is parsed again, so the 100,000 jobs
// of a plain sweep cost a few key lookups each.
StatusOr<JobNeeds> NeedsOfJobJson(const nlohmann::json& spec);

}  // namespace benchfleet
