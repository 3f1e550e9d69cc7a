#include "storage/migrations.hpp"

#include <array>

namespace kernelscan {
namespace {

constexpr std::string_view k_v1 = R"sql(
CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  name             TEXT    NOT NULL,
  status           TEXT    NOT NULL
                   CHECK (status IN ('queued','running','succeeded','failed','cancelled')),
  priority         INTEGER NOT NULL,
  engine           TEXT    NOT NULL,
  requested_device INTEGER,            -- NULL: any device
  device           INTEGER,            -- where it runs or ran
  op               TEXT    NOT NULL,
  total_points     INTEGER NOT NULL,
  done_points      INTEGER NOT NULL DEFAULT 0,
  ok_points        INTEGER NOT NULL DEFAULT 0,
  failed_points    INTEGER NOT NULL DEFAULT 0,
  best_index       INTEGER,
  best_median_us   REAL,
  best_params      TEXT,               -- JSON object of the best point's sweep parameters
  created_ms       INTEGER NOT NULL,
  started_ms       INTEGER,
  finished_ms      INTEGER,
  error_type       TEXT,
  error_message    TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  labels           TEXT    NOT NULL DEFAULT '',  -- for display; job_labels is for filters
  idempotency_key  TEXT UNIQUE,
  request_hash     TEXT
);
CREATE INDEX jobs_by_status ON jobs (status, id);

-- Apart from jobs so that progress updates, once per point, rewrite a small row and not the
-- spec (a custom kernel's source, a long sweep list) with it.
CREATE TABLE job_specs (
  job_id INTEGER PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
  spec   TEXT    NOT NULL    -- canonical JSON
);

CREATE TABLE job_labels (
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  key    TEXT    NOT NULL,
  value  TEXT    NOT NULL,
  PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
CREATE INDEX job_labels_by_value ON job_labels (key, value, job_id);

CREATE TABLE results (
  job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  idx        INTEGER NOT NULL,
  status     TEXT    NOT NULL CHECK (status IN ('ok','failed')),
  median_us  REAL,
  params     TEXT    NOT NULL,   -- JSON object
  result     TEXT    NOT NULL,   -- JSON row as the API returns it
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
)sql";

// Issue 4: the job's fitness summary, the result cache, and each device's measured roofline.
constexpr std::string_view k_v2 = R"sql(
ALTER TABLE jobs ADD COLUMN fitness TEXT;          -- summary JSON, written when the job ends
ALTER TABLE jobs ADD COLUMN cache_key TEXT;        -- what was measured, where; NULL: not cacheable
ALTER TABLE jobs ADD COLUMN cached_from INTEGER;   -- the job whose results answered this one
CREATE INDEX jobs_by_cache_key ON jobs (cache_key, id) WHERE cache_key IS NOT NULL;

CREATE TABLE device_rooflines (
  device_key  TEXT    PRIMARY KEY,   -- engine, name, driver and index of the device
  roofline    TEXT    NOT NULL,      -- JSON: the ceilings, measured_ms, method
  measured_ms INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

constexpr std::array<std::string_view, 2> k_steps{k_v1, k_v2};

}  // namespace

std::span<const std::string_view> schema_migrations() {
  return k_steps;
}

}  // namespace kernelscan
