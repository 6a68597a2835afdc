-- What each result offers a user choosing a configuration (docs/results.md, Capacity):
-- the one place that says which throughput and which latency describe a result, and so
-- the one place of the cost formula.
--   capacity_per_s   samples/s the configuration sustains: a server run's highest rate
--                    within its SLO (else the rate it achieved), all replicas together,
--                    else the job's own throughput_per_s
--   latency_p99_ms   a serving run's p99 from arrival (queueing included), replicas'
--                    slowest copy's median, else one iteration's p99 (else its median)
--   accuracy_loss    1 - top1_agreement, else rel_err; 0 for an fp32 model as built
--                    (no pruning, no reference); NULL when unmeasured
--   stale            1 when the result predates its host's last fingerprint change
--   cost_per_1m_samples  per_hour / (capacity_per_s × 3600) × 1e6 at the host's current
--                    price; NULL for a host without one
CREATE VIEW result_capacity AS
SELECT c.*, p.per_hour, p.currency, p.set_at AS price_set_at,
       p.per_hour / (c.capacity_per_s * 3600.0) * 1e6 AS cost_per_1m_samples
FROM (
  SELECT s.sweep_id, s.sweep, s.job_id, s.host, s.device, s.model, s.model_args, s.mode, s.dtype,
         coalesce(s.scenario, 'offline') AS scenario, s.threads, s.batch_size,
         coalesce(s.replicas, 1) AS replicas, s.median_ms, s.throughput_per_s,
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

-- result_cost now prices a result's capacity (above), so that a server run or a replicas
-- job is priced by what the host serves; for any other result capacity_per_s is
-- throughput_per_s and the cost is unchanged. cpu_gpu_cost reads result_cost by name
-- and keeps working.
DROP VIEW result_cost;
CREATE VIEW result_cost AS
SELECT sweep_id, sweep, job_id, host, device, model, model_args, mode, dtype, scenario,
       batch_size, threads, replicas, median_ms, throughput_per_s, capacity_per_s,
       per_hour, currency, price_set_at, cost_per_1m_samples
FROM result_capacity
WHERE per_hour IS NOT NULL AND capacity_per_s > 0;
