#include "storage/sqlite_migrations.hpp"

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

// The job's fitness summary, the result cache, and each device's measured roofline.
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

// What a job's summary and the result cache need of each row, in columns, so that no query
// parses result JSON: the point's fitness and flags, and for a row copied from the result cache
// the job that measured it (the row's text stays as measured; reads add the "cache" member).
// Rows stored before are filled in from their JSON, once.
constexpr std::string_view k_v3 = R"sql(
ALTER TABLE results ADD COLUMN correct INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN combined_score REAL NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN speedup REAL;
ALTER TABLE results ADD COLUMN latency_score REAL;
ALTER TABLE results ADD COLUMN flags TEXT NOT NULL DEFAULT '';  -- comma-separated
ALTER TABLE results ADD COLUMN cache_origin INTEGER;
UPDATE results SET
  correct = coalesce(json_extract(result, '$.fitness.correct'), 0),
  combined_score = coalesce(json_extract(result, '$.fitness.combined_score'), 0),
  speedup = json_extract(result, '$.fitness.speedup'),
  latency_score = json_extract(result, '$.fitness.latency_score'),
  flags = coalesce((SELECT group_concat(value, ',') FROM json_each(result, '$.flags')), ''),
  cache_origin = json_extract(result, '$.cache.job_id'),
  result = CASE WHEN json_extract(result, '$.cache.hit') THEN json_remove(result, '$.cache')
           ELSE result END;
)sql";

// Dispatch in the store (DESIGN.md §7): a job records the node that claimed it, under which
// claim (attempt) and until when (its lease), and where it asks to run (placement); the queue
// index serves claims in priority then submission order. Nodes and their devices, as their
// heartbeats report them. One daemon uses a SQLite file, so it is a fleet of one node.
constexpr std::string_view k_v4 = R"sql(
ALTER TABLE jobs ADD COLUMN node TEXT;               -- the node that runs or ran it
ALTER TABLE jobs ADD COLUMN place_node TEXT;         -- placement: only this node ...
ALTER TABLE jobs ADD COLUMN place_model TEXT;        -- ... or only this catalog model
ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;  -- claims so far
ALTER TABLE jobs ADD COLUMN lease_expires_ms INTEGER;            -- while running
CREATE INDEX jobs_queue ON jobs (priority DESC, id) WHERE status = 'queued';
CREATE INDEX jobs_leases ON jobs (lease_expires_ms) WHERE status = 'running';

CREATE TABLE nodes (
  name         TEXT    PRIMARY KEY,
  instance     TEXT    NOT NULL,   -- the running process: a random id per start
  version      TEXT    NOT NULL,
  started_ms   INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL,
  stopped_ms   INTEGER             -- set when it stops cleanly
) WITHOUT ROWID;

CREATE TABLE devices (
  node        TEXT    NOT NULL REFERENCES nodes (name) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,
  engine      TEXT    NOT NULL,
  model       TEXT    NOT NULL,
  state       TEXT    NOT NULL,
  current_job INTEGER,
  info        TEXT    NOT NULL,      -- the device as the API shows it, JSON
  PRIMARY KEY (node, idx)
) WITHOUT ROWID;
)sql";

// Variants: several kernels measured side by side in one job. Each row names its variant (NULL
// for a job without), and a job that ends keeps the summary of its variants (JSON).
constexpr std::string_view k_v5 = R"sql(
ALTER TABLE results ADD COLUMN variant TEXT;
ALTER TABLE jobs ADD COLUMN variants_summary TEXT;
)sql";

// Evaluation tasks: what an operator fixes of the jobs agents submit against them, and the task
// each job was submitted against (NULL for a plain job).
constexpr std::string_view k_v6 = R"sql(
CREATE TABLE tasks (
  name        TEXT    PRIMARY KEY,
  description TEXT    NOT NULL,
  template    TEXT    NOT NULL,   -- JSON: the parts of a job spec the task fixes
  created_ms  INTEGER NOT NULL,
  retired_ms  INTEGER             -- set once retired: no new submissions
) WITHOUT ROWID;
ALTER TABLE jobs ADD COLUMN task TEXT;
CREATE INDEX jobs_task ON jobs (task, id) WHERE task IS NOT NULL;
)sql";

// What a job needs of the device that claims it (f64 arithmetic, its GEMMs' dtypes), as bits a
// claim matches against the bits its device lacks. 0 for the jobs stored before: any device.
constexpr std::string_view k_v7 = R"sql(
ALTER TABLE jobs ADD COLUMN needs INTEGER NOT NULL DEFAULT 0;
)sql";

// A job's best point is its ok point of the lowest median per unit of work (cost_of), so that
// the best of a problem-size sweep is its fastest per FLOP, not its smallest. A job stored
// before has none: its best stays the smallest median.
constexpr std::string_view k_v8 = R"sql(
ALTER TABLE jobs ADD COLUMN best_cost REAL;
)sql";

// Who submitted a task's job (a hash of its bearer token, or its address), so that a task can
// bound the submissions of each agent.
constexpr std::string_view k_v9 = R"sql(
ALTER TABLE jobs ADD COLUMN agent TEXT;
CREATE INDEX jobs_task_agent ON jobs (task, agent, created_ms) WHERE agent IS NOT NULL;
)sql";

// Deleting jobs that ended (DELETE /api/v1/jobs/{id}, --retention-days): the jobs by when they
// ended, for the retention sweep; and a deleted task job's agent and creation time, so that it
// stays counted against the agent's bound on submissions.
constexpr std::string_view k_v10 = R"sql(
CREATE INDEX jobs_ended ON jobs (finished_ms, id)
  WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE deleted_submissions (
  task       TEXT    NOT NULL,
  agent      TEXT    NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX deleted_submissions_by_agent ON deleted_submissions (task, agent, created_ms);
)sql";

constexpr std::array<std::string_view, 10> k_steps{k_v1, k_v2, k_v3, k_v4, k_v5,
                                                   k_v6, k_v7, k_v8, k_v9, k_v10};

}  // namespace

std::span<const std::string_view> sqlite_migrations() {
  return k_steps;
}

}  // namespace kernelscan
