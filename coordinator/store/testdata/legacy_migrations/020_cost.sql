-- What a host costs (docs/results.md, Cost): its price per hour, with the currency and
-- the time it was set. A price is set by the agent's --price-per-hour when it registers
-- (recorded when it differs from the last price that agent sent) or by `benchfleet host
-- set-price`; the newest row of a host is its price, and older rows stay as history.
CREATE TABLE host_prices (
  price_id  INTEGER PRIMARY KEY,
  host_id   INTEGER NOT NULL REFERENCES hosts(host_id),
  per_hour  REAL NOT NULL CHECK (per_hour >= 0),
  currency  TEXT NOT NULL,
  set_at    TEXT NOT NULL,
  source    TEXT NOT NULL CHECK (source IN ('agent', 'cli'))
);
CREATE INDEX host_prices_by_host ON host_prices(host_id, price_id);

-- Each priced host's current price.
CREATE VIEW host_price AS
SELECT h.host_id, h.name AS host, p.per_hour, p.currency, p.set_at, p.source
FROM hosts h
JOIN host_prices p ON p.price_id = (SELECT max(q.price_id) FROM host_prices q WHERE q.host_id = h.host_id);

-- The cost of a million samples of each result on a priced host, at its current price:
-- per_hour / (throughput_per_s × 3600) × 1e6. A training result's samples are training
-- samples; `mode` says which.
CREATE VIEW result_cost AS
SELECT s.sweep_id, s.sweep, s.job_id, s.host, s.device, s.model, s.model_args, s.mode,
       s.dtype, s.batch_size, s.threads, s.median_ms, s.throughput_per_s,
       p.per_hour, p.currency, p.set_at AS price_set_at,
       p.per_hour / (s.throughput_per_s * 3600.0) * 1e6 AS cost_per_1m_samples
FROM result_summary s
JOIN host_price p ON p.host = s.host
WHERE s.throughput_per_s > 0;

-- CPU against GPU for the same workload (sweep, model, arguments, mode, dtype, batch):
-- the cheapest CPU result and the cheapest GPU result of any host, per currency.
-- cost_ratio > 1: the GPU's samples are cheaper.
CREATE VIEW cpu_gpu_cost AS
WITH best AS (
  SELECT sweep_id, model, model_args, mode, dtype, batch_size, currency,
         CASE WHEN device = 'cpu' THEN 'cpu' ELSE 'gpu' END AS kind,
         host, device, threads, throughput_per_s, per_hour, cost_per_1m_samples,
         row_number() OVER (PARTITION BY sweep_id, model, model_args, mode, dtype, batch_size, currency,
                                         device = 'cpu'
                            ORDER BY cost_per_1m_samples, job_id) AS rank
  FROM result_cost)
SELECT c.sweep_id, c.model, c.model_args, c.mode, c.dtype, c.batch_size, c.currency,
       c.host AS cpu_host, c.threads AS cpu_threads, c.throughput_per_s AS cpu_throughput_per_s,
       c.per_hour AS cpu_per_hour, c.cost_per_1m_samples AS cpu_cost_per_1m_samples,
       g.host AS gpu_host, g.device AS gpu_device, g.throughput_per_s AS gpu_throughput_per_s,
       g.per_hour AS gpu_per_hour, g.cost_per_1m_samples AS gpu_cost_per_1m_samples,
       c.cost_per_1m_samples / g.cost_per_1m_samples AS cost_ratio
FROM best c
JOIN best g
  ON g.sweep_id = c.sweep_id AND g.model = c.model AND g.model_args IS c.model_args
 AND g.mode = c.mode AND g.dtype = c.dtype AND g.batch_size = c.batch_size
 AND g.currency = c.currency AND g.kind = 'gpu' AND g.rank = 1
WHERE c.kind = 'cpu' AND c.rank = 1;
