-- Sites (docs/sites.md): which store this is, and, in a store `benchfleet merge` wrote,
-- which store each of its rows came from.
--
-- store_identity: one row. store_id is 32 random hex digits, drawn when the store is made
-- (or first opened by a coordinator with this step) and never changed: every copy of the
-- file has it, so a store merged twice, or a copy of it, adds nothing the second time.
-- merged: 1 in a store `benchfleet merge` wrote, which is read with --db and which no
-- coordinator serves (its sweeps are other fleets', and it has no queue of its own).
CREATE TABLE store_identity (
  only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
  store_id TEXT NOT NULL CHECK (length(store_id) = 32),
  merged   INTEGER NOT NULL DEFAULT 0 CHECK (merged IN (0, 1))
);
INSERT INTO store_identity (only_row, store_id) VALUES (1, lower(hex(randomblob(16))));

-- The stores a merged store holds rows of, one row each (none in a coordinator's store).
--   store_id         that store's store_identity.store_id
--   name             the site's name: as `benchfleet merge` was told (NAME=PATH), else
--                    its file's name without the extension; kept from its first merge
--   source           the file it was merged from last, at merged_at (UTC ISO 8601)
--   schema_version   that store's PRAGMA user_version then
CREATE TABLE sites (
  site_id         INTEGER PRIMARY KEY,
  store_id        TEXT NOT NULL UNIQUE,
  name            TEXT NOT NULL UNIQUE,
  source          TEXT NOT NULL,
  first_merged_at TEXT NOT NULL,
  merged_at       TEXT NOT NULL,
  schema_version  INTEGER NOT NULL
);

-- Where each row of a merged store that has an id of its own came from: its table and
-- its id here, its site and its id there. A merged store numbers sweeps, jobs and the
-- rest anew (each site counts from 1); the rows keyed by a job (results, samples, ranks,
-- processes, operator profiles) follow their job. A host seen by several sites is one
-- row here with one entry per site (docs/sites.md, Hosts).
CREATE TABLE site_rows (
  table_name  TEXT NOT NULL,
  row_id      INTEGER NOT NULL,
  site_id     INTEGER NOT NULL REFERENCES sites(site_id),
  site_row_id INTEGER NOT NULL,
  PRIMARY KEY (table_name, site_id, site_row_id)
) WITHOUT ROWID;
CREATE INDEX site_rows_by_row ON site_rows(table_name, row_id);
