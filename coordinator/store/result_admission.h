// Whether a result can ever be a job's result: the one place a delivered result is held
// against the job it claims (its kind, its echoed configuration, its ranks). Pure: it
// reads nothing and writes nothing, so the writer (coordinator/store/result_writer.h) only
// writes, and the rules are tested without a store.
#pragma once

#include <cstdint>
#include <optional>

#include "common/job_spec.h"
#include "common/status.h"
#include "common/worker_result.h"

namespace benchfleet {

// A job as the store holds it.
struct StoredJob {
  int64_t job_id = 0;
  bool calibration = false;
  std::optional<JobSpec> config;  // a benchmark's configuration; none for a calibration
};

// Ok, or InvalidArgument whose message names the result's field that no result of
// this job can have ("result.kind: ...", "result.dtype: ...", "result.ranks: ...").
// Not judged here: whether the attempt still owns the job (the writer's fence).
Status AdmitResult(const StoredJob& job, const WorkerResult& result);

}  // namespace benchfleet
