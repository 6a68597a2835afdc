// Which agent may run which job. A job's requirement is what decides it: the sweep's
// `select`, the job's `device` (a cuda:N job needs an agent whose worker sees more than
// N GPUs) and, for placement "each" and calibrations, the agent it is pinned to. Jobs
// share requirements (a sweep has a handful), so the dispatcher matches an agent against
// requirements once and then asks the store for the oldest queued job among those it
// matches, however many queued jobs match nothing (schemas/sweep.md, docs/scheduling.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/capabilities.h"

namespace benchfleet {

using nlohmann::json;

// What the scheduler knows of an agent.
struct AgentDescription {
  std::string name;
  std::vector<std::string> tags;
  Capabilities capabilities;
};

struct JobRequirement {
  int64_t requirement_id = 0;
  std::string kind = "benchmark";  // or "calibration" (dispatched first)
  std::string pinned_host;         // empty: any agent that matches
  json select = json::object();    // the sweep's select (validated by ParseSweep)
  std::string device;              // "cpu", "cuda", "cuda:N"; empty for calibrations
};

// True when the agent satisfies every key of `select` (an empty select matches all).
// Besides the sweep's keys, a requirement's select carries what its jobs ask of the
// worker (SelectWithWorker): the agent must have a worker that satisfies it.
bool AgentMatches(const json& select, const AgentDescription& agent);

// A requirement's select may carry a job's thread placement other than the default
// ({"policy": "spread", "threads": 4}, under this key): only an agent whose CPUs can
// give it (capabilities.cpu_shape, PlacementRefusal) matches; one that sent no shape
// does, and refuses the job itself if it cannot. A sweep's own select cannot name it.
inline constexpr const char* kThreadPlacementKey = "thread_placement";
bool CanPlaceThreads(const json& select, const AgentDescription& agent);
// `select` with the thread placement of job `spec`, where it is not the default.
json SelectWithThreadPlacement(const json& select, const json& spec);

// `select` with what a job asks of the agent's worker (WorkerNeeds) as its keys "torch",
// "torch_min" and "technique": jobs that ask for different workers have different
// requirements (and so different rows of `requirements`).
json SelectWithWorker(const json& select, const WorkerNeeds& worker);
// What a requirement's select asks of the worker.
WorkerNeeds WorkerNeedsOfSelect(const json& select);
// `select` of the side A of a pair (schemas/sweep.md, Versus), under the key "versus":
// what side B asks of a worker of the same agent (WorkerNeeds, empty when side A's worker
// runs both) and the CPUs a duet needs on it (0: none beyond side A's). An agent matches
// only when it has a worker for each side and, for a duet, that many CPUs.
inline constexpr const char* kVersusSelectKey = "versus";
json SelectWithVersus(const json& select, const WorkerNeeds& side_b, int64_t duet_cpus);

// GPUs a device string needs: 0 for "cpu" (or empty), N + 1 for "cuda:N" ("cuda" is
// cuda:0).
int64_t GpusNeeded(const std::string& device);

// True when `agent` may run a job with this requirement.
bool AgentCanRun(const JobRequirement& requirement, const AgentDescription& agent);

// For people: "{gpu_model: H100, device: cuda:1}" or "agent node-a".
std::string DescribeRequirement(const JobRequirement& requirement);

}  // namespace benchfleet
