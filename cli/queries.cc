#include "cli/queries.h"

namespace benchfleet {
namespace {

// A column as a statement selects it: model_args is NULL for a model without
// arguments, and two such results must pair, so it reads as ''.
std::string SelectedColumn(const std::string& name) {
  return name == "model_args" ? "coalesce(model_args, '') AS model_args" : name;
}

// "1, 2, 3": the ids inside a compare statement's IN (...).
std::string CommaList(const std::vector<int64_t>& ids) {
  std::string list;
  for (int64_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return list;
}

// "(1,2,3)": a report's range of sweeps, "(NULL)" when it has none (matches no row).
std::string InList(const std::vector<int64_t>& ids) {
  std::string in = "(";
  for (int64_t id : ids) in += (in.size() > 1 ? "," : "") + std::to_string(id);
  in += in.size() > 1 ? ")" : "NULL)";
  return in;
}

// The moment `seconds` ago, in the store's UTC text form (comparable as text).
std::string SecondsAgo(int64_t seconds) {
  return "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-" + std::to_string(seconds) + " seconds')";
}

// The columns of result_capacity a candidate is made of.
constexpr const char* kCandidateColumns =
    "job_id, host, model, device, dtype, scenario, threads, batch_size, replicas, capacity_per_s, "
    "latency_p99_ms, median_ms, median_ci_low_ms, median_ci_high_ms, accuracy_loss, "
    "cost_per_1m_samples, currency, joules_per_sample, noisy, stale";

// Every successful inference result matching `where` (a condition on the view's columns).
std::string CandidatesSql(const std::string& where) {
  return std::string("SELECT ") + kCandidateColumns +
         " FROM result_capacity WHERE mode = 'inference' AND (" + where + ") ORDER BY job_id";
}

// The header's facts of each sweep (not its spec: a sweep file can be 100 KB).
constexpr const char* kSweepColumns =
    "SELECT sweep_id, name, labels, state, created_at, finished_at FROM sweeps";

}  // namespace

const std::vector<std::string>& ConfigColumnNames() {
  static const std::vector<std::string> names = {"host", "device", "model",      "model_args",
                                                 "mode", "dtype",  "batch_size", "threads"};
  return names;
}

std::string ResultsOfSweepsSql(const std::vector<int64_t>& sweep_ids) {
  std::string sql = "SELECT sweep_id, job_id";
  for (const std::string& name : ConfigColumnNames()) sql += ", " + SelectedColumn(name);
  return sql +
         ", median_ms, median_ci_low_ms, median_ci_high_ms, host_pace_ms "
         "FROM result_summary WHERE sweep_id IN (" +
         CommaList(sweep_ids) + ") ORDER BY job_id";
}

std::string KnownSweepsSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT sweep_id, state FROM sweeps WHERE sweep_id IN (" + CommaList(sweep_ids) + ")";
}

std::string CompareSamplesSql(const std::vector<int64_t>& job_ids) {
  return "SELECT job_id, group_concat(ms) AS samples FROM samples "
         "WHERE job_id IN (" +
         CommaList(job_ids) + ") GROUP BY job_id";
}

std::string CompareProcessMediansSql(const std::vector<int64_t>& job_ids) {
  return "SELECT job_id, group_concat(median_ms) AS medians FROM (SELECT job_id, median_ms FROM "
         "result_processes WHERE job_id IN (" +
         CommaList(job_ids) + ") ORDER BY job_id, process) GROUP BY job_id";
}

std::string VersusOfSweepSql(int64_t sweep_id) {
  return "SELECT host, device, model, model_args, mode, dtype, batch_size, threads, axis, "
         "a_value, b_value, pairing, pairs, a_median_ms, a_ci_low_ms, a_ci_high_ms, b_median_ms, "
         "b_ci_low_ms, b_ci_high_ms, ratio, ratio_ci_low, ratio_ci_high, p, change, detectable, "
         "stopped, why, a_job_id, b_job_id FROM versus_comparison WHERE sweep_id = " +
         std::to_string(sweep_id) + " ORDER BY a_job_id";
}

std::string PivotMediansSql(const std::vector<std::string>& row_keys, const std::string& pivot,
                            const std::vector<int64_t>& sweep_ids) {
  std::string keys;
  for (const std::string& key : row_keys) keys += SelectedColumn(key) + ", ";
  const std::string column = pivot == "sweep" ? "sweep_id" : pivot;
  return "SELECT " + keys + column +
         " AS pivot_column, median_ms, "
         "median_ci_relative FROM result_summary WHERE sweep_id IN (" +
         CommaList(sweep_ids) + ")";
}

std::string CalibrationOfSweepSql(int64_t sweep_id) {
  return "select host, gemm_gflops_all, gemm_threads_all, gemm_gflops_1, "
         "stream_triad_gbps_all, stream_triad_gbps_1, theoretical_gflops_all, measured_at "
         "from host_calibration where job_id in (select job_id from jobs where sweep_id = " +
         std::to_string(sweep_id) + ") order by host";
}

const std::vector<ResultView>& ResultViewTable() {
  static const std::vector<ResultView> views = {
      {"summary", "result_summary", ""},
      {"speedup", "CPU vs GPU: cpu_gpu_speedup",
       "select sweep_id, host, model, mode, dtype, batch_size, cpu_threads, gpu_device, "
       "cpu_median_ms, gpu_median_ms, speedup from cpu_gpu_speedup"},
      {"batch", "batch-size scaling: batch_scaling",
       "select sweep_id, host, device, model, mode, dtype, threads, batch_size, median_ms, "
       "throughput_per_s, throughput_vs_smallest_batch, ms_per_sample from batch_scaling"},
      {"threads", "thread scaling: thread_scaling",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, median_ms, "
       "effective_threads, threads_mismatch, speedup, parallel_efficiency from thread_scaling"},
      {"dtype", "int8/bf16 vs fp32: dtype_comparison",
       "select sweep_id, host, device, model, mode, batch_size, threads, dtype, fp32_median_ms, "
       "median_ms, speedup, speedup_ci_low, speedup_ci_high, speedup_interval, max_abs_err, "
       "mean_abs_err, rel_err, top1_agreement from dtype_comparison"},
      {"technique", "memory_format, jit, eager/torchscript/aoti: technique_comparison",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, technique, "
       "variant, baseline, baseline_median_ms, baseline_ci_low_ms, baseline_ci_high_ms, median_ms, "
       "median_ci_low_ms, median_ci_high_ms, speedup, speedup_ci_low, speedup_ci_high, "
       "speedup_interval, compile_s, max_abs_err, rel_err from technique_comparison"},
      {"torch", "LibTorch versions side by side: torch_comparison",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, technique, "
       "base_torch, base_median_ms, base_ci_low_ms, base_ci_high_ms, torch, median_ms, "
       "median_ci_low_ms, median_ci_high_ms, speedup, speedup_ci_low, speedup_ci_high, "
       "speedup_interval, differs from torch_comparison"},
      {"versus", "paired A/B comparisons of a sweep's versus: versus_comparison",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, axis, a_value, "
       "b_value, pairing, pairs, a_median_ms, b_median_ms, ratio, ratio_ci_low, ratio_ci_high, "
       "change, detectable, stopped from versus_comparison"},
      {"prune", "pruned vs unpruned: prune_comparison",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, prune_kind, "
       "prune_amount, baseline_median_ms, median_ms, speedup, params_unpruned, params, "
       "weight_sparsity, max_abs_err, rel_err, top1_agreement from prune_comparison"},
      {"ops", "profiled operators vs their baseline: op_comparison",
       "select sweep_id, host, model, mode, batch_size, device, dtype, threads, op, calls, "
       "self_us_per_iter, self_us_per_call, base_device, base_dtype, base_threads, "
       "base_self_us_per_iter, speedup, input_shapes from op_comparison"},
      {"checkpointing", "checkpointing_comparison",
       "select sweep_id, host, device, model, dtype, batch_size, threads, model_args, "
       "plain_median_ms, checkpointed_median_ms, time_ratio, plain_step_peak_alloc_mb, "
       "checkpointed_step_peak_alloc_mb, memory_ratio, plain_peak_rss_mb, "
       "checkpointed_peak_rss_mb from checkpointing_comparison"},
      {"parallel", "jobs of several ranks: parallel_scaling",
       "select sweep_id, host_set, model, kind, world_size, batch_size, bytes, threads, "
       "pipeline_schedule as schedule, micro_batches, median_ms, samples_per_s, "
       "scaling_efficiency, comm_share, overlap_share, busbw_gbps, bubble, bubble_theory, "
       "speedup_vs_unsplit from parallel_scaling"},
      {"calibration", "host peaks: host_calibration",
       "select host, gemm_gflops_all, gemm_threads_all, gemm_gflops_1, stream_triad_gbps_all, "
       "stream_triad_gbps_1, theoretical_gflops_all, theoretical_gflops_1, gpus, measured_at "
       "from host_calibration"},
      {"cost", "cost per 1M samples: result_cost",
       "select sweep_id, host, device, model, mode, dtype, batch_size, threads, throughput_per_s, "
       "per_hour, currency, cost_per_1m_samples from result_cost"},
      {"cpu-gpu-cost", "cpu_gpu_cost",
       "select sweep_id, model, mode, dtype, batch_size, currency, cpu_host, cpu_threads, "
       "cpu_cost_per_1m_samples, gpu_host, gpu_device, gpu_cost_per_1m_samples, cost_ratio from "
       "cpu_gpu_cost"},
      {"capacity", "what each result offers a decision: result_capacity",
       "select sweep_id, host, device, model, mode, dtype, scenario, batch_size, threads, "
       "replicas, capacity_per_s, latency_p99_ms, accuracy_loss, cost_per_1m_samples, currency, "
       "noisy, stale from result_capacity"},
      {"fit", "max_batch_fit",
       "select sweep_id, host, device, model, mode, dtype, threads, memory_mb, limit_kind, "
       "baseline_mb, max_batch, start_batch, median_ms, throughput_per_s, peak_rss_mb, probes "
       "from max_batch_fit"},
      {"replicas", "replica_scaling",
       "select sweep_id, host, model, mode, dtype, batch_size, cores, replicas, threads, "
       "aggregate_throughput_per_s, replica_median_ms, slowest_median_ms, overlap_s, noisy "
       "from replica_scaling"},
      {"serving", "single_stream and server runs",
       "select sweep_id, host, model, dtype, threads, scenario, max_batch, max_wait_ms, "
       "target_qps, achieved_qps, p50_ms, p90_ms, p99_ms, queries, mean_batch, slo_p99_ms, "
       "max_qps_within_slo from serving"},
  };
  return views;
}

std::string ResultViewSql(const ResultView& view, std::optional<int64_t> sweep_id) {
  std::string sql = view.select;
  if (sweep_id && std::string(view.name) != "calibration") {
    sql += " where sweep_id = " + std::to_string(*sweep_id);
  }
  return sql + " order by 1, 2, 3, 4, 5, 6, 7, 8";
}

std::string ConfirmedRegressionsSql(std::optional<int64_t> within_s) {
  std::string sql =
      "SELECT first_seen_at, first_seen_sweep_id, decided_at, host, model, mode, dtype, "
      "batch_size, threads, device, direction, change_pct, median_ms, median_ci_low_ms, "
      "median_ci_high_ms, rerun_median_ms, baseline_median_ms, baseline_n, baseline_from, "
      "baseline_to, reruns, job_id FROM confirmed_regressions";
  if (within_s) sql += " WHERE decided_at >= " + SecondsAgo(*within_s);
  return sql + " ORDER BY first_seen_at DESC";
}

std::string CandidatesOfModelSql(const std::string& model) {
  return CandidatesSql("model = '" + model + "'");
}

std::string CandidatesOfSweepsSql(const std::vector<int64_t>& sweep_ids) {
  return CandidatesSql("sweep_id IN " + InList(sweep_ids));
}

std::string ReportSweepSql(int64_t sweep_id) {
  return std::string(kSweepColumns) + " WHERE sweep_id = " + std::to_string(sweep_id);
}

std::string ReportSweepsWithinSql(int64_t within_s) {
  const std::string cutoff = SecondsAgo(within_s);
  return std::string(kSweepColumns) +
         " WHERE sweep_id IN (SELECT sweep_id FROM results WHERE received_at >= " + cutoff +
         ") OR created_at >= " + cutoff + " ORDER BY sweep_id";
}

std::string ReportThroughputSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT host, device, model, model_args, mode, dtype, threads, batch_size, "
         "avg(throughput_per_s) AS throughput_per_s, avg(median_ms) AS median_ms, count(*) AS "
         "runs "
         "FROM result_summary WHERE sweep_id IN " +
         InList(sweep_ids) +
         " AND throughput_per_s IS NOT NULL AND coalesce(world_size, 1) <= 1 "
         "GROUP BY host, device, model, model_args, mode, dtype, threads, batch_size "
         "ORDER BY model, host, device, mode, dtype, threads, batch_size";
}

std::string ReportSpeedupSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT host, model, model_args, mode, dtype, batch_size, cpu_threads, gpu_device, "
         "avg(speedup) AS speedup, avg(cpu_median_ms) AS cpu_median_ms, avg(gpu_median_ms) AS "
         "gpu_median_ms "
         "FROM cpu_gpu_speedup WHERE sweep_id IN " +
         InList(sweep_ids) +
         " GROUP BY host, model, model_args, mode, dtype, batch_size, cpu_threads, gpu_device "
         "ORDER BY host, model, mode, dtype, batch_size, cpu_threads, gpu_device";
}

std::string ReportThreadsSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT host, device, model, model_args, mode, dtype, batch_size, threads, "
         "avg(speedup) AS speedup, avg(median_ms) AS median_ms, "
         "avg(parallel_efficiency) AS parallel_efficiency, "
         "avg(effective_threads) AS effective_threads FROM thread_scaling WHERE sweep_id IN " +
         InList(sweep_ids) +
         " GROUP BY host, device, model, model_args, mode, dtype, batch_size, threads "
         "ORDER BY model, host, device, mode, dtype, batch_size, threads";
}

std::string ReportDtypesSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT host, device, model, model_args, mode, batch_size, threads, dtype, "
         "avg(speedup) AS speedup, "
         "avg(fp32_median_ms) AS fp32_median_ms, avg(median_ms) AS median_ms, "
         "max(max_abs_err) AS max_abs_err, "
         "avg(rel_err) AS rel_err, min(top1_agreement) AS top1_agreement FROM dtype_comparison "
         "WHERE sweep_id IN " +
         InList(sweep_ids) +
         " AND dtype IN ('int8', 'bf16') "
         "GROUP BY host, device, model, model_args, mode, batch_size, threads, dtype "
         "ORDER BY host, device, model, mode, batch_size, threads, dtype";
}

std::string ReportParallelSql(const std::vector<int64_t>& sweep_ids) {
  return "SELECT host_set, model, kind, world_size, batch_size, "
         "avg(coalesce(scaling_efficiency, speedup_vs_unsplit / world_size)) AS efficiency, "
         "avg(comm_share) AS comm_share, avg(samples_per_s) AS samples_per_s, "
         "avg(median_ms) AS median_ms, "
         "avg(bubble) AS bubble FROM parallel_scaling WHERE sweep_id IN " +
         InList(sweep_ids) +
         " AND kind <> 'collective' GROUP BY host_set, model, model_args, kind, world_size, "
         "batch_size "
         "ORDER BY model, kind, host_set, batch_size, world_size";
}

std::string ReportHistorySql(const std::vector<int64_t>& sweep_ids, std::optional<int64_t> within_s,
                             size_t max_series) {
  const std::string since = within_s ? " AND r.received_at >= " + SecondsAgo(*within_s) : "";
  return "WITH chosen AS (SELECT r.series, count(*) AS n, "
         "(SELECT count(*) FROM regressions g WHERE g.series = r.series AND g.state = "
         "'confirmed') AS confirmed "
         "FROM results r JOIN jobs j ON j.job_id = r.job_id WHERE r.ok = 1 AND j.kind = "
         "'benchmark'" +
         since + " AND r.series IN (SELECT series FROM results WHERE sweep_id IN " +
         InList(sweep_ids) +
         " AND series IS NOT NULL) "
         "GROUP BY r.series ORDER BY confirmed DESC, n DESC, r.series LIMIT " +
         std::to_string(max_series) +
         ") SELECT r.series, h.name AS host, r.device, r.model, r.model_args, r.mode, r.dtype, "
         "r.batch_size, r.threads, "
         "r.received_at, r.median_ms, r.median_ci_low_ms, r.median_ci_high_ms, r.job_id, "
         "r.sweep_id, g.direction, round(g.change * 100, 1) AS change_pct "
         "FROM results r JOIN chosen c ON c.series = r.series JOIN jobs j ON j.job_id = r.job_id "
         "JOIN hosts h ON h.host_id = r.host_id "
         "LEFT JOIN regressions g ON g.job_id = r.job_id AND g.state = 'confirmed' "
         "WHERE r.ok = 1 AND j.kind = 'benchmark'" +
         since + " ORDER BY c.confirmed DESC, c.n DESC, r.series, r.received_at";
}

}  // namespace benchfleet
