-- Raw samples, compactly: one row per result instead of one per sample (a 10,000-job
-- night stored ~850 MB in the old samples table). ms_f32le holds the samples in the
-- order taken, each a float32 in little-endian byte order (coordinator/sample_blob.h,
-- docs/results.md). A result without a row here has no raw samples: a failed job, or
-- samples dropped by `benchfleet prune`.
CREATE TABLE result_samples (
  job_id   INTEGER PRIMARY KEY REFERENCES results(job_id),
  n        INTEGER NOT NULL,   -- number of samples: length(ms_f32le) / 4
  ms_f32le BLOB NOT NULL
);

-- benchfleet_pack_samples is registered by the coordinator that runs this migration.
INSERT INTO result_samples(job_id, n, ms_f32le)
  SELECT job_id, count(*), benchfleet_pack_samples(idx, ms) FROM samples GROUP BY job_id;
DROP TABLE samples;

-- The old table's rows, unpacked in plain SQL so that any SQLite client can read them:
-- samples(job_id, idx, ms). Each sample's four bytes are read as an IEEE 754 float32:
-- sign bit, 8-bit exponent (0: subnormal), 23-bit fraction. Filter on job_id: that is an
-- index lookup; the whole view is every sample ever kept.
CREATE VIEW samples AS
WITH x(hex_bytes) AS (SELECT '00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10 11 12 13 14 15 16 17 18 19 1A 1B 1C 1D 1E 1F 20 21 22 23 24 25 26 27 28 29 2A 2B 2C 2D 2E 2F 30 31 32 33 34 35 36 37 38 39 3A 3B 3C 3D 3E 3F 40 41 42 43 44 45 46 47 48 49 4A 4B 4C 4D 4E 4F 50 51 52 53 54 55 56 57 58 59 5A 5B 5C 5D 5E 5F 60 61 62 63 64 65 66 67 68 69 6A 6B 6C 6D 6E 6F 70 71 72 73 74 75 76 77 78 79 7A 7B 7C 7D 7E 7F 80 81 82 83 84 85 86 87 88 89 8A 8B 8C 8D 8E 8F 90 91 92 93 94 95 96 97 98 99 9A 9B 9C 9D 9E 9F A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 AA AB AC AD AE AF B0 B1 B2 B3 B4 B5 B6 B7 B8 B9 BA BB BC BD BE BF C0 C1 C2 C3 C4 C5 C6 C7 C8 C9 CA CB CC CD CE CF D0 D1 D2 D3 D4 D5 D6 D7 D8 D9 DA DB DC DD DE DF E0 E1 E2 E3 E4 E5 E6 E7 E8 E9 EA EB EC ED EE EF F0 F1 F2 F3 F4 F5 F6 F7 F8 F9 FA FB FC FD FE FF')
SELECT rs.job_id AS job_id,
       j.key     AS idx,
       (1 - 2 * (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) >> 7))
         * (((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) & 127) * 65536 + ((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 2, 1))) - 1) / 3) * 256 + ((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 1, 1))) - 1) / 3)) + (((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) & 127) * 2 + (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) >> 7)) > 0) * 8388608)
         * power(2, max(((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) & 127) * 2 + (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) >> 7)), 1) - 150) AS ms
FROM result_samples rs,
     json_each('[' || rtrim(replace(hex(zeroblob(rs.n)), '00', '0,'), ',') || ']') j,
     x;
