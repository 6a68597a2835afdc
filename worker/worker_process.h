// Test support: a job run in a fresh benchfleet-worker process, as the agent runs it
// (BENCHFLEET_WORKER_BIN, defined by worker/CMakeLists.txt for the files that include this).
#ifndef BENCHFLEET_WORKER_WORKER_PROCESS_H_
#define BENCHFLEET_WORKER_WORKER_PROCESS_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "worker/job_runner.h"

namespace benchfleet::worker {

// Runs `job` in a new worker started by `/bin/sh -c "[prefix] worker --job ... --out ..."`
// (`prefix`: an environment or a taskset for it); its result and exit code.
inline JobOutcome RunWorkerProcess(const nlohmann::json& job, const std::string& prefix = "") {
  const std::string base = std::filesystem::temp_directory_path() /
                           ("bf-worker-" + std::to_string(getpid()) + "-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::ofstream(base + ".job.json") << job.dump();
  const std::string command = prefix + " " + std::string(BENCHFLEET_WORKER_BIN) + " --job " + base +
                              ".job.json --out " + base + ".out.json > " + base + ".log 2>&1";
  const int status = std::system(command.c_str());
  JobOutcome outcome;
  outcome.exit_code =
      static_cast<ExitCode>(WIFEXITED(status) ? WEXITSTATUS(status) : kExitInternal);
  std::ifstream in(base + ".out.json");
  outcome.result = nlohmann::json::parse(in, nullptr, false);
  for (const char* suffix : {".job.json", ".out.json", ".log"})
    std::remove((base + suffix).c_str());
  return outcome;
}

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_WORKER_PROCESS_H_
