-- Queries over a year of nights (1,000,000 results) must be lookups, not scans
-- (docs/performance.md, Storage). The comparison views pair results of the same sweep,
-- host and configuration: with the sweep on the result itself, one index finds a
-- result's partner. A host's history of a model is the second lookup users make.
ALTER TABLE results ADD COLUMN sweep_id INTEGER REFERENCES sweeps(sweep_id);
UPDATE results SET sweep_id = (SELECT j.sweep_id FROM jobs j WHERE j.job_id = results.job_id);
CREATE INDEX results_by_sweep_series ON results(sweep_id, host_id, model, mode, batch_size, dtype);
CREATE INDEX results_by_host_series ON results(host_id, model, mode, batch_size, dtype);
