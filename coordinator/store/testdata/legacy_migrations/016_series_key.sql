-- A compact key for each result's series (docs/regressions.md): the first 60 bits of
-- its SHA-256 (`results.series`, 64 hex digits) as an integer. Storing a result looks up
-- its series' baseline; with the 64-character text as the index key, a store where most
-- results start a series (a sweep of a million configurations) grew an index of random
-- keys past the page cache, and each stored result cost a read of a page no longer
-- cached. An integer key makes each entry a quarter of the size. Two series that share
-- a key (less than one chance in a million among a million series) stay apart: the baseline query
-- also compares `series` itself.
ALTER TABLE results ADD COLUMN series_key INTEGER;
UPDATE results SET series_key =
  ((instr('0123456789abcdef', substr(series, 1, 1)) - 1) << 56) |
  ((instr('0123456789abcdef', substr(series, 2, 1)) - 1) << 52) |
  ((instr('0123456789abcdef', substr(series, 3, 1)) - 1) << 48) |
  ((instr('0123456789abcdef', substr(series, 4, 1)) - 1) << 44) |
  ((instr('0123456789abcdef', substr(series, 5, 1)) - 1) << 40) |
  ((instr('0123456789abcdef', substr(series, 6, 1)) - 1) << 36) |
  ((instr('0123456789abcdef', substr(series, 7, 1)) - 1) << 32) |
  ((instr('0123456789abcdef', substr(series, 8, 1)) - 1) << 28) |
  ((instr('0123456789abcdef', substr(series, 9, 1)) - 1) << 24) |
  ((instr('0123456789abcdef', substr(series, 10, 1)) - 1) << 20) |
  ((instr('0123456789abcdef', substr(series, 11, 1)) - 1) << 16) |
  ((instr('0123456789abcdef', substr(series, 12, 1)) - 1) << 12) |
  ((instr('0123456789abcdef', substr(series, 13, 1)) - 1) << 8) |
  ((instr('0123456789abcdef', substr(series, 14, 1)) - 1) << 4) |
  ((instr('0123456789abcdef', substr(series, 15, 1)) - 1) << 0)
WHERE series IS NOT NULL;
DROP INDEX results_by_series;
CREATE INDEX results_by_series_key ON results(series_key, job_id);
