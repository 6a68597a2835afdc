// The SQL the CLI sends to the coordinator's `query` request: every statement of
// `compare`, `recommend`, `regressions`, `calibrate --wait`, `results --view` and
// `report`, over the tables and views of docs/results.md. The one file of the CLI that
// knows the schema; callers read the rows they get back by column name
// (RowsReply::Objects()), so a column moved within a statement changes nothing there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet {

// compare

// The configuration a result is of, as the comparison views pair results: the names of
// the columns ResultsOfSweepsSql returns for it (model_args '' where it has none).
const std::vector<std::string>& ConfigColumnNames();

// Each result of the sweeps (not empty), oldest job first.
// Reads result_summary; the caller reads sweep_id, job_id, ConfigColumnNames(), median_ms,
// median_ci_low_ms, median_ci_high_ms.
std::string ResultsOfSweepsSql(const std::vector<int64_t>& sweep_ids);
// Those of the sweeps the store has, and each one's state; the caller reads sweep_id, state.
std::string KnownSweepsSql(const std::vector<int64_t>& sweep_ids);

// One row per job (not empty) that has raw samples: its samples as a comma-separated list.
// Reads samples; the caller reads job_id, samples.
std::string CompareSamplesSql(const std::vector<int64_t>& job_ids);
// Each job's process medians (schemas/sweep.md, Processes) as a list, in order.
std::string CompareProcessMediansSql(const std::vector<int64_t>& job_ids);

// One sweep's paired comparisons (its versus), every column of versus_comparison.
// Reads versus_comparison; the caller reads the configuration, axis, a_value, b_value,
// ratio, ratio_ci_low, ratio_ci_high, change, detectable, ...
std::string VersusOfSweepSql(int64_t sweep_id);

// The sweeps' medians for a pivot: `row_keys` (result_summary's column names, as
// --rows takes them) and the column `pivot` (host, device, dtype, threads or sweep).
// Reads result_summary; the caller reads row_keys, pivot_column, median_ms, median_ci_relative.
std::string PivotMediansSql(const std::vector<std::string>& row_keys, const std::string& pivot,
                            const std::vector<int64_t>& sweep_ids);

// calibrate --wait

// The calibrations a calibration sweep measured, by host.
// Reads host_calibration (and jobs); the caller prints every column.
std::string CalibrationOfSweepSql(int64_t sweep_id);

// results --view

// One view of docs/results.md that `results --view` shows: its name, what it is (the
// --view help) and the columns worth a terminal's width.
struct ResultView {
  const char* name;
  const char* what;
  const char* select;  // its SELECT, without WHERE or ORDER BY; empty for "summary"
};
// Every view `results --view` knows; first "summary", result_summary, which the
// `results` request answers (no query).
const std::vector<ResultView>& ResultViewTable();

// The rows of `view` (not "summary"), of one sweep where given (host_calibration, a
// host's, has none), ordered by the first eight columns.
// Reads the view its `select` names (docs/results.md); the caller prints every column.
std::string ResultViewSql(const ResultView& view, std::optional<int64_t> sweep_id);

// regressions

// Confirmed regressions and improvements, newest first; those decided within the last
// `within_s` seconds where given.
// Reads confirmed_regressions (docs/regressions.md); the caller prints every column.
std::string ConfirmedRegressionsSql(std::optional<int64_t> within_s);

// recommend (result_capacity is the one place that says which throughput, latency,
// accuracy loss and cost describe a result)

// Every successful inference result of `model` (a known model name: it is not quoted),
// oldest first.
// Reads result_capacity; CandidatesFrom (cli/recommend.h) reads its columns.
std::string CandidatesOfModelSql(const std::string& model);

// Every successful inference result of the sweeps, oldest first.
// Reads result_capacity; CandidatesFrom (cli/recommend.h) reads its columns.
std::string CandidatesOfSweepsSql(const std::vector<int64_t>& sweep_ids);

// report (each section's statement, over the range's sweeps; no sweep ids: no rows)

// The header's facts of one sweep (not its spec: a sweep file can be 100 KB).
// Reads sweeps; the caller reads sweep_id, name, labels, state, created_at, finished_at.
std::string ReportSweepSql(int64_t sweep_id);

// The same facts of every sweep with a result, or made, within the last `within_s` seconds.
// Reads sweeps, results; the caller reads sweep_id, name, labels, state, created_at, finished_at.
std::string ReportSweepsWithinSql(int64_t within_s);

// Single-process throughput per configuration and batch size (the mean over the runs).
// Reads result_summary; the caller reads host, device, model, model_args, mode, dtype,
// threads, batch_size, throughput_per_s, median_ms, runs.
std::string ReportThroughputSql(const std::vector<int64_t>& sweep_ids);

// GPU speedup over the same host's CPU, per configuration.
// Reads cpu_gpu_speedup; the caller reads host, model, model_args, mode, dtype, batch_size,
// cpu_threads, gpu_device, speedup, cpu_median_ms, gpu_median_ms.
std::string ReportSpeedupSql(const std::vector<int64_t>& sweep_ids);

// Speedup over one thread, per configuration and thread count.
// Reads thread_scaling; the caller reads host, device, model, model_args, mode, dtype,
// batch_size, threads, speedup, median_ms, parallel_efficiency, effective_threads.
std::string ReportThreadsSql(const std::vector<int64_t>& sweep_ids);

// int8 and bf16 against fp32, per configuration.
// Reads dtype_comparison; the caller reads host, device, model, model_args, mode, batch_size,
// threads, dtype, speedup, fp32_median_ms, median_ms, max_abs_err, rel_err, top1_agreement.
std::string ReportDtypesSql(const std::vector<int64_t>& sweep_ids);

// Efficiency of data- and model-parallel jobs (collectives left out): data-parallel
// throughput(N) / (N x throughput(1)); pipeline: the unsplit step over the pipelined one,
// per rank.
// Reads parallel_scaling; the caller reads host_set, model, kind, world_size, batch_size,
// efficiency, comm_share, samples_per_s, median_ms, bubble.
std::string ReportParallelSql(const std::vector<int64_t>& sweep_ids);

// The history of at most `max_series` series the sweeps ran (those with confirmed
// regressions first, then the longest), each successful benchmark result with its
// confirmed change; only results received within the last `within_s` seconds where given.
// Reads results, jobs, hosts, regressions; the caller reads series, host, device, model,
// model_args, mode, dtype, batch_size, threads, received_at, median_ms, median_ci_low_ms,
// median_ci_high_ms, job_id, sweep_id, direction, change_pct.
std::string ReportHistorySql(const std::vector<int64_t>& sweep_ids, std::optional<int64_t> within_s,
                             size_t max_series);

}  // namespace benchfleet
