-- How many jobs each sweep has in each state, per requirement, kept by triggers as jobs
-- are added and change state. `status` reads these few rows instead of counting a
-- sweep's jobs (on a 100,000-job sweep under load, counting took most of the
-- coordinator's time between results), and "is this sweep finished?" after each
-- result is one lookup. The triggers are the only writers: any change to jobs, by
-- the coordinator or by hand, keeps the counts true.
CREATE TABLE job_counts (
  sweep_id       INTEGER NOT NULL,
  requirement_id INTEGER NOT NULL,
  state          TEXT NOT NULL,
  n              INTEGER NOT NULL,
  PRIMARY KEY (sweep_id, requirement_id, state)
) WITHOUT ROWID;

INSERT INTO job_counts(sweep_id, requirement_id, state, n)
  SELECT sweep_id, coalesce(requirement_id, 0), state, COUNT(*) FROM jobs
  GROUP BY 1, 2, 3;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO job_counts(sweep_id, requirement_id, state, n)
    VALUES (new.sweep_id, coalesce(new.requirement_id, 0), new.state, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_update AFTER UPDATE OF state, sweep_id, requirement_id ON jobs
WHEN old.state IS NOT new.state OR old.sweep_id IS NOT new.sweep_id
     OR old.requirement_id IS NOT new.requirement_id BEGIN
  UPDATE job_counts SET n = n - 1 WHERE sweep_id = old.sweep_id
    AND requirement_id = coalesce(old.requirement_id, 0) AND state = old.state;
  INSERT INTO job_counts(sweep_id, requirement_id, state, n)
    VALUES (new.sweep_id, coalesce(new.requirement_id, 0), new.state, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
  UPDATE job_counts SET n = n - 1 WHERE sweep_id = old.sweep_id
    AND requirement_id = coalesce(old.requirement_id, 0) AND state = old.state;
END;
