-- Labels and metadata of a sweep (`benchfleet submit --label commit=abc123`, or the
-- sweep file's "labels" object): kept in the sweep's spec, where they were written, and
-- read through these, so that SQL finds sweeps by label.
--   sweeps.labels   the sweep's labels, a JSON object of strings ('{}' when none)
--   sweep_labels    one row per label of each sweep: sweep_id, sweep (its name), label,
--                   value; e.g. the sweeps of a commit:
--                   SELECT sweep_id FROM sweep_labels WHERE label = 'commit' AND value = 'abc123'
ALTER TABLE sweeps ADD COLUMN labels TEXT
  GENERATED ALWAYS AS (coalesce(json_extract(spec, '$.labels'), '{}')) VIRTUAL;

CREATE VIEW sweep_labels AS
SELECT s.sweep_id, s.name AS sweep, l.key AS label, l.value AS value
FROM sweeps s, json_each(s.labels) l;
