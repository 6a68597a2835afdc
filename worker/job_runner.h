#ifndef BENCHFLEET_WORKER_JOB_RUNNER_H_
#define BENCHFLEET_WORKER_JOB_RUNNER_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace benchfleet::worker {

// Process exit codes of benchfleet-worker (schemas/worker.md).
enum ExitCode : int {
  kExitOk = 0,        // result has "ok": true
  kExitInternal = 1,  // unexpected failure inside the worker
  kExitRejected = 2,  // the job was invalid or failed for a reason its author can fix
};

struct JobOutcome {
  nlohmann::json result;  // the result JSON of schemas/worker.md
  ExitCode exit_code = kExitInternal;
};

// Validates and runs `job` in this process and returns its result. Applies
// the job's thread settings to the whole process first. Never throws: every
// failure becomes an "ok": false result whose "error" says what to fix.
JobOutcome RunJob(const nlohmann::json& job);

// Reads the job JSON at `job_path`, runs it, and writes the result to
// `result_path` atomically (temporary file, fsync, rename). An unreadable or
// malformed job file still produces an "ok": false result. Returns the exit
// code for the process.
ExitCode RunJobFile(const std::string& job_path, const std::string& result_path);

// The OpenMP wait policy the job file at `job_path` asks for ("default" when it names
// none, or cannot be read: RunJobFile then reports why); nullopt for a value that is
// no policy, which RunJobFile refuses.
std::optional<std::string> JobFileWaitPolicy(const std::string& job_path);

// Prints the probe JSON (one line) to stdout. Returns the exit code.
ExitCode PrintProbe();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_JOB_RUNNER_H_
