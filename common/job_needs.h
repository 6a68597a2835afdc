// What a job asks of the fleet: how many processes, on how many agents, with how many
// CPUs on one agent. Computed once, from the checked spec, when the job is stored
// (JobQueue keeps it in the job's row), read from there by the dispatcher and carried
// in the job's offer to the agent, which starts that many processes. No hop after
// intake reads the spec for it (docs/architecture.md, the life of a job).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/status.h"

namespace benchfleet {

// Which of an agent's workers can run a job (an agent may carry several, each built
// against another LibTorch: `benchfleet-agent --worker A --worker B`). Empty members ask
// nothing; a job that asks nothing runs on the agent's first worker.
struct WorkerNeeds {
  // The job's `torch`: a prefix of the worker's torch version (TorchVersionMatches).
  std::string torch;
  // The oldest torch that runs the job: an AOTInductor package's own (the coordinator
  // reads it from the package; docs/scheduling.md, Workers).
  std::string torch_min;
  // A technique the worker must run (its probe's `techniques`): "torchscript" or "aoti"
  // for a zoo model compiled so, "aoti" for a package; empty for eager.
  std::string technique;

  bool empty() const { return torch.empty() && torch_min.empty() && technique.empty(); }
  bool operator==(const WorkerNeeds& other) const;
  // True when a worker of `torch_version` that runs `techniques` satisfies them.
  bool SatisfiedBy(const std::string& torch_version,
                   const std::vector<std::string>& techniques) const;
  // For people and as a placement's key: "torch 1.13, torch >= 2.15.0, technique aoti";
  // empty when they ask nothing.
  std::string Describe() const;
};

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

  // Which worker of an agent may run it.
  WorkerNeeds worker;

  // The agents a job needs at once: world_size for a spread gang, else 1.
  int64_t Agents() const { return spread ? world_size : 1; }
  bool operator==(const JobNeeds& other) const;

  // The job offer's `needs` object (schemas/protocol.md).
  nlohmann::json ToJson() const;
  // `field` names the object in messages ("job.needs"). Refuses a value out of range
  // by name, and needs that contradict each other.
  static StatusOr<JobNeeds> FromJson(const nlohmann::json& needs, const std::string& field);
};

// The needs of a checked spec: the one rule. The worker's torch_min, which only the
// package knows, is the caller's to add.
JobNeeds NeedsOf(const JobSpec& spec);

// The needs of a job's JSON as a sweep expands it (checked by ParseJobConfig before it
// is stored): only a spec that asks for more than one process (`parallel`,
// `distributed`, `replicas` or a spread placement) is parsed again, so the 100,000 jobs
// of a plain sweep cost a few key lookups each.
StatusOr<JobNeeds> NeedsOfJobJson(const nlohmann::json& spec);

}  // namespace benchfleet
