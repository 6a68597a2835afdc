// benchfleet-worker: runs one benchmark job with LibTorch (see schemas/worker.md).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include "worker/host/omp_wait_policy.h"
#include "worker/job_runner.h"
#include "worker/torch_calibration.h"

int main(int argc, char** argv) {
  namespace worker = benchfleet::worker;
  CLI::App app{
      "Runs one benchmark job with LibTorch and writes its result JSON.\n"
      "Exit codes: 0 ok, 2 job rejected or failed (result written, ok=false),\n"
      "1 internal failure.",
      "benchfleet-worker"};
  std::string job_path;
  std::string result_path;
  bool probe = false;
  auto* job = app.add_option("--job", job_path, "job JSON file to run");
  auto* out = app.add_option("--out", result_path, "where to write the result JSON");
  auto* probe_flag =
      app.add_flag("--probe", probe, "print this build's and host's capabilities as JSON");
  bool calibrate = false;
  std::int64_t gemm_n = worker::kDefaultCalibrationGemmN;
  auto* calibrate_flag =
      app.add_flag("--calibrate", calibrate,
                   "measure this host's peak GEMM GFLOP/s, memory bandwidth and GPUs; print JSON");
  app.add_option("--calibrate-gemm-n", gemm_n, "N of the N x N fp32 GEMM for --calibrate")
      ->check(CLI::PositiveNumber)
      ->needs(calibrate_flag);
  job->needs(out);
  out->needs(job);
  probe_flag->excludes(job)->excludes(out);
  calibrate_flag->excludes(job)->excludes(out)->excludes(probe_flag);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A malformed command line is the caller's bug, not the job's: exit 1.
    const int code = app.exit(e);
    return code == 0 ? worker::kExitOk : worker::kExitInternal;
  }
  if (probe) return worker::PrintProbe();
  if (calibrate) return worker::PrintCalibration(gemm_n);
  if (job_path.empty()) {
    std::cerr << "benchfleet-worker: give --job FILE --out FILE, or --probe (see --help)\n";
    return worker::kExitInternal;
  }
  // The job's OpenMP wait policy must be in the environment before any library
  // initialises; the agent puts it there, a run by hand may not have.
  if (const std::optional<std::string> policy = worker::JobFileWaitPolicy(job_path)) {
    if (const std::optional<std::string> why = worker::ReexecUnderWaitPolicy(*policy, argv)) {
      std::cerr << "benchfleet-worker: " << *why << "\n";  // the job is then refused
    }
  }
  return worker::RunJobFile(job_path, result_path);
}
