#include "coordinator/store/result_admission.h"

#include <algorithm>
#include <string>

namespace benchfleet {
namespace {

// The first echoed configuration field that differs from the job's, as an error naming
// it; Ok when the echo agrees (absent fields agree).
Status EchoAgrees(const ResultEcho& echo, const JobSpec& job) {
  auto text = [](const char* name, const std::optional<std::string>& got, const std::string& want) {
    return got && *got != want ? std::string("result.") + name + ": \"" + got->substr(0, 64) +
                                     "\" is not the job's \"" + want + "\""
                               : std::string();
  };
  auto number = [](const char* name, const std::optional<int64_t>& got, int64_t want) {
    return got && *got != want ? std::string("result.") + name + ": " + std::to_string(*got) +
                                     " is not the job's " + std::to_string(want)
                               : std::string();
  };
  for (const std::string& mismatch :
       {text("model", echo.model, job.model), text("mode", echo.mode, job.mode),
        text("dtype", echo.dtype, job.dtype), text("device", echo.device, job.device),
        number("batch_size", echo.batch_size, job.batch_size),
        number("threads", echo.threads, job.threads),
        number("interop_threads", echo.interop_threads, job.interop_threads)}) {
    if (!mismatch.empty()) return InvalidArgument(mismatch);
  }
  return Status::Ok();
}

}  // namespace

Status AdmitResult(const StoredJob& job, const WorkerResult& result) {
  const std::string id = std::to_string(job.job_id);
  if (result.ok && result.calibration_kind != job.calibration) {
    return InvalidArgument(
        job.calibration ? "result.kind: job " + id + " is a calibration; its result must be one"
                        : "result.kind: job " + id + " is a benchmark, not a calibration");
  }
  if (job.config) RETURN_IF_ERROR(EchoAgrees(result.echo, *job.config));
  // A gang that ran on one agent reports all its ranks in one result (a failed one, the
  // ranks that got as far as ending); all of them when it succeeded (a lone rank's
  // result, say after a coordinator restart, cannot stand for the gang). Replicas
  // report each copy as a gang reports each rank (they never have ranks too).
  const int64_t world = job.config ? std::max(job.config->replicas, JobWorldSize(*job.config)) : 1;
  const bool gang = job.config && !job.config->distributed && world > 1;
  const int64_t ranks = static_cast<int64_t>(result.ranks.size());
  if ((ranks > 0 && (!gang || ranks > world)) || (gang && result.ok && ranks != world)) {
    return InvalidArgument("result.ranks: " + std::to_string(ranks) + " ranks for job " + id +
                           " of " + std::to_string(world));
  }
  return Status::Ok();
}

}  // namespace benchfleet
