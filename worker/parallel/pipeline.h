// Model-parallel by pipeline (the job's `parallel` object, kind "pipeline"): the model
// split into consecutive stages, one per rank, each a benchfleet-worker process; the
// batch goes through in micro-batches in a GPipe schedule (every forward, then every
// backward in train mode), activations and gradients between stages by c10d send and
// recv. schemas/worker.md has what it reports and how it is checked.
#pragma once

#include <cstdint>
#include <vector>

#include "common/job_spec.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

// Meets the other stages, checks one pass against the unsplit model (outputs, and in
// train mode every stage's gradients), times the unsplit model on rank 0 alone (the
// baseline), and returns the pipelined step to time. Throws WorkloadError when the
// rendezvous or a check fails.
PreparedWorkload PreparePipeline(const JobSpec& spec);

// The same split inside this one worker (parallel.in_process): stage s on cuda:s, the
// batch in micro-batches through them (GPipe: the GPUs overlap micro-batches by
// themselves, as kernel launches are asynchronous). Checks one pass against the unsplit
// model on cuda:0, which is also the baseline. Throws WorkloadError when the worker sees
// fewer GPUs than stages.
PreparedWorkload PrepareInProcessPipeline(const JobSpec& spec);

// The first unit of each stage, and the end: `units` split into `stages` consecutive
// parts whose sizes differ by at most one, the larger ones first.
std::vector<std::int64_t> StageBoundaries(std::int64_t units, std::int64_t stages);

// GPipe's bubble: the share of S stages x wall time idle when M micro-batches go
// through, (S - 1) / (M + S - 1).
double GpipeBubble(std::int64_t stages, std::int64_t micro_batches);

}  // namespace benchfleet::worker
