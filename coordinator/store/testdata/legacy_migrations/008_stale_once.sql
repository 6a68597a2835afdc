-- A late result is recorded once per attempt and agent. An agent resends a result
-- until it is acknowledged, so a resend that crosses the first ack arrives again; for
-- a stored result that is a "duplicate" and writes nothing, and a stale one must be
-- the same. Rows this table already holds twice keep their first copy.
DELETE FROM stale_results WHERE stale_id NOT IN (
  SELECT MIN(stale_id) FROM stale_results GROUP BY job_id, attempt, host);

CREATE UNIQUE INDEX stale_results_once ON stale_results(job_id, attempt, host);
