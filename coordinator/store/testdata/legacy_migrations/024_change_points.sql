-- A regression is a change point, reported once (docs/regressions.md):
--   * the judged result's median interval, which widens the noise its change is measured
--     against, is kept with the candidate;
--   * the sweep it was first seen on;
--   * a confirmed change starts its series' baseline anew, so the baseline lookup asks
--     for the series' latest confirmed change (the partial index below).
ALTER TABLE regressions ADD COLUMN median_ci_low_ms REAL;
ALTER TABLE regressions ADD COLUMN median_ci_high_ms REAL;
ALTER TABLE regressions ADD COLUMN sweep_id INTEGER REFERENCES sweeps(sweep_id);
UPDATE regressions SET sweep_id = (SELECT j.sweep_id FROM jobs j WHERE j.job_id = regressions.job_id);
CREATE INDEX regressions_confirmed_by_series ON regressions(series, job_id) WHERE state = 'confirmed';
CREATE INDEX regressions_open_by_series ON regressions(series) WHERE state = 'candidate';

-- Each confirmed change point once: when and on which sweep it was first seen (the
-- night whose result became the candidate), the configuration and host, its size, the
-- candidate's median with its interval, and the baseline it left.
DROP VIEW confirmed_regressions;
CREATE VIEW confirmed_regressions AS
SELECT g.regression_id, g.detected_at AS first_seen_at, g.sweep_id AS first_seen_sweep_id,
       g.detected_at, g.decided_at, h.name AS host, r.model, r.mode, r.dtype,
       r.batch_size, r.threads, r.device, r.model_args, g.direction,
       round(g.change * 100, 1) AS change_pct, g.median_ms, g.median_ci_low_ms,
       g.median_ci_high_ms, g.rerun_median_ms,
       g.baseline_median_ms, g.baseline_mad_ms, g.baseline_n, g.baseline_from, g.baseline_to,
       g.z, g.reruns, g.job_id, r.sweep_id, g.series
FROM regressions g
JOIN results r ON r.job_id = g.job_id
JOIN hosts h ON h.host_id = g.host_id
WHERE g.state = 'confirmed';

-- result_capacity as in 022, with the median's interval beside the median, for
-- `benchfleet recommend` and the report (result_cost reads it by name and is unchanged).
DROP VIEW result_capacity;
CREATE VIEW result_capacity AS
SELECT c.*, p.per_hour, p.currency, p.set_at AS price_set_at,
       p.per_hour / (c.capacity_per_s * 3600.0) * 1e6 AS cost_per_1m_samples
FROM (
  SELECT s.sweep_id, s.sweep, s.job_id, s.host, s.device, s.model, s.model_args, s.mode, s.dtype,
         coalesce(s.scenario, 'offline') AS scenario, s.threads, s.batch_size,
         coalesce(s.replicas, 1) AS replicas, s.median_ms, s.median_ci_low_ms, s.median_ci_high_ms,
         s.throughput_per_s,
         coalesce(s.max_qps_within_slo, s.achieved_qps, s.aggregate_throughput_per_s,
                  s.throughput_per_s) AS capacity_per_s,
         coalesce(s.serving_p99_ms, s.replica_median_ms_max, s.p99_ms, s.median_ms) AS latency_p99_ms,
         CASE WHEN s.top1_agreement IS NOT NULL THEN 1 - s.top1_agreement
              WHEN s.rel_err IS NOT NULL THEN s.rel_err
              WHEN s.dtype = 'fp32' AND s.prune_kind IS NULL AND s.reference_model IS NULL THEN 0
         END AS accuracy_loss,
         s.joules_per_sample, coalesce(s.noisy, 0) AS noisy,
         (r.fingerprint IS NOT h.fingerprint) AS stale
  FROM result_summary s
  JOIN results r ON r.job_id = s.job_id
  JOIN hosts h ON h.name = s.host) c
LEFT JOIN host_price p ON p.host = c.host;
