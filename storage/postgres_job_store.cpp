#include "storage/postgres_job_store.hpp"

#include <spdlog/spdlog.h>

#include <set>

#include "storage/detail/store_text.hpp"
#include "storage/postgres_migrations.hpp"

namespace kernelscan {
namespace {

using detail::pg_array;
using detail::pg_connection;
using detail::pg_param;
using detail::pg_result;
using detail::pg_transaction;

// Serialises migrations of one database: daemons starting together migrate once.
constexpr std::int64_t k_migration_lock = 0x4B534E31'00000001;

// read_row() reads these by position; a query may add columns after them (k_column_count).
const std::string k_columns =
    "id, name, status, priority, engine, requested_device, device, op, total_points, "
    "done_points, ok_points, failed_points, best_index, best_median_us, created_ms, started_ms, "
    "finished_ms, error_type, error_message, cancel_requested, best_params, labels, fitness, "
    "cached_from";
constexpr int k_column_count = 24;

std::optional<int> opt_int(const std::optional<std::int64_t>& v) {
  if (!v) return std::nullopt;
  return int(*v);
}

job_record read_row(const pg_result& r, int i) {
  job_record j;
  j.id = r.int64(i, 0);
  j.name = std::string(r.text(i, 1));
  j.status = parse_job_status(r.text(i, 2)).value_or(job_status::failed);
  j.priority = int(r.int64(i, 3));
  j.engine = detail::parse_engine(r.text(i, 4));
  j.requested_device = opt_int(r.opt_int64(i, 5));
  j.device = opt_int(r.opt_int64(i, 6));
  j.op = std::string(r.text(i, 7));
  j.progress.total = std::uint64_t(r.int64(i, 8));
  j.progress.done = std::uint64_t(r.int64(i, 9));
  j.progress.ok = std::uint64_t(r.int64(i, 10));
  j.progress.failed = std::uint64_t(r.int64(i, 11));
  if (!r.is_null(i, 12)) {
    j.best = job_best{std::uint64_t(r.int64(i, 12)), r.real(i, 13), std::string(r.text(i, 20))};
  }
  j.created_ms = r.int64(i, 14);
  j.started_ms = r.opt_int64(i, 15);
  j.finished_ms = r.opt_int64(i, 16);
  if (!r.is_null(i, 17)) {
    j.error = point_error{std::string(r.text(i, 17)), std::string(r.text(i, 18))};
  }
  j.cancel_requested = r.boolean(i, 19);
  j.labels = detail::decode_labels(r.text(i, 21));
  if (!r.is_null(i, 22)) j.fitness_json = std::string(r.text(i, 22));
  j.cached_from = r.opt_int64(i, 23);
  return j;
}

// Rows of a "SELECT idx, params, result, cache_origin FROM results ..." query.
std::vector<stored_result> read_results(const pg_result& r) {
  std::vector<stored_result> out;
  out.reserve(std::size_t(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    stored_result s{std::uint64_t(r.int64(i, 0)), std::string(r.text(i, 1)),
                    std::string(r.text(i, 2))};
    if (!r.is_null(i, 3)) s.result_json = detail::with_cache_hit(s.result_json, r.int64(i, 3));
    out.push_back(std::move(s));
  }
  return out;
}

std::int64_t clamp_limit(std::uint64_t limit) {
  return std::int64_t(std::min<std::uint64_t>(limit, INT64_MAX));
}

// Stores points and advances their jobs' progress and best point in one statement, so a batch
// costs one round trip: the rows arrive as arrays, rows already stored are skipped (and not
// counted), and each job's best point of the batch replaces its best if it is faster. Ties go
// to the earlier row, as when rows are stored one at a time.
const std::string k_insert_rows = R"sql(
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::float8[], $5::text[],
                       $6::text[], $7::boolean[], $8::float8[], $9::float8[], $10::float8[],
                       $11::text[])
    WITH ORDINALITY AS t(job_id, idx, status, median_us, params, result, correct,
                         combined_score, speedup, latency_score, flags, ord)
), inserted AS (
  INSERT INTO kernelscan.results (job_id, idx, status, median_us, params, result, created_ms,
                                  correct, combined_score, speedup, latency_score, flags)
  SELECT job_id, idx, status, median_us, params, result, $12, correct, combined_score, speedup,
         latency_score, flags
  FROM input ORDER BY ord
  ON CONFLICT DO NOTHING
  RETURNING job_id, idx
), fresh AS (
  SELECT i.* FROM input i JOIN inserted n ON n.job_id = i.job_id AND n.idx = i.idx
), counts AS (
  SELECT job_id, count(*) AS n, count(*) FILTER (WHERE status = 'ok') AS ok
  FROM fresh GROUP BY job_id
), best AS (
  SELECT DISTINCT ON (job_id) job_id, idx, median_us, params FROM fresh
  WHERE status = 'ok' AND median_us IS NOT NULL
  ORDER BY job_id, median_us, ord
)
UPDATE kernelscan.jobs j SET
  done_points = j.done_points + c.n,
  ok_points = j.ok_points + c.ok,
  failed_points = j.failed_points + (c.n - c.ok),
  best_index = CASE WHEN b.median_us IS NOT NULL AND (j.best_median_us IS NULL OR
               b.median_us < j.best_median_us) THEN b.idx ELSE j.best_index END,
  best_params = CASE WHEN b.median_us IS NOT NULL AND (j.best_median_us IS NULL OR
                b.median_us < j.best_median_us) THEN b.params ELSE j.best_params END,
  best_median_us = CASE WHEN b.median_us IS NOT NULL AND (j.best_median_us IS NULL OR
                   b.median_us < j.best_median_us) THEN b.median_us ELSE j.best_median_us END
FROM counts c LEFT JOIN best b ON b.job_id = c.job_id
WHERE j.id = c.job_id
)sql";

}  // namespace

std::vector<std::pair<std::string, std::string>> postgres_settings(
    const postgres_options& options) {
  // Defaults first: the URL may set any of them. A dead server is noticed within seconds, not
  // the kernel's TCP timeouts of minutes.
  std::vector<std::pair<std::string, std::string>> s{{"connect_timeout", "5"},
                                                     {"keepalives", "1"},
                                                     {"keepalives_idle", "10"},
                                                     {"keepalives_interval", "5"},
                                                     {"keepalives_count", "3"},
                                                     {"tcp_user_timeout", "15000"},
                                                     {"application_name", options.application_name},
                                                     {"dbname", options.url}};
  if (!options.password.empty()) s.emplace_back("password", options.password);
  return s;
}

void migrate_postgres(pg_connection& c) {
  const auto steps = postgres_migrations();
  pg_transaction tx(c);
  c.exec("SELECT pg_advisory_xact_lock($1)", {k_migration_lock});
  c.exec_script("CREATE SCHEMA IF NOT EXISTS kernelscan");
  const bool versioned = !c.exec("SELECT to_regclass('kernelscan.schema_version')").is_null(0, 0);
  if (!versioned) {
    const auto tables = c.exec("SELECT count(*) FROM pg_tables WHERE schemaname = 'kernelscan'");
    if (tables.int64(0, 0) != 0) {
      throw storage_error(
          "the database's schema \"kernelscan\" holds another application's tables; refusing "
          "to migrate it",
          false);
    }
    c.exec_script(
        "CREATE TABLE kernelscan.schema_version (version integer NOT NULL); "
        "INSERT INTO kernelscan.schema_version VALUES (0)");
  }
  const auto version = int(c.exec("SELECT version FROM kernelscan.schema_version").int64(0, 0));
  if (version > int(steps.size())) {
    throw storage_error("the database has schema version " + std::to_string(version) +
                            ", newer than this kernelscan knows (" + std::to_string(steps.size()) +
                            "); upgrade kernelscan",
                        false);
  }
  for (int v = version; v < int(steps.size()); ++v) {
    c.exec_script(std::string(steps[std::size_t(v)]));
    c.exec("UPDATE kernelscan.schema_version SET version = $1", {v + 1});
    spdlog::info("storage: migrated the PostgreSQL database to schema version {}", v + 1);
  }
  tx.commit();
}

postgres_job_store::postgres_job_store(const postgres_options& options)
    : m_pool(postgres_settings(options), options.pool_size, std::chrono::seconds(10)) {
  auto c = m_pool.acquire();
  migrate_postgres(*c);
}

postgres_job_store::~postgres_job_store() = default;

std::optional<submit_outcome> postgres_job_store::insert_job(
    pg_connection& c, const job_submission& job, job_status status, std::int64_t now_ms,
    std::optional<std::int64_t> finished_ms) {
  std::vector<pg_param> keys, values;
  for (const auto& [k, v] : job.labels) {
    keys.emplace_back(k);
    values.emplace_back(v);
  }
  const auto r = c.exec(
      "WITH j AS (INSERT INTO kernelscan.jobs (name, status, priority, engine, requested_device, "
      "op, total_points, created_ms, started_ms, finished_ms, idempotency_key, request_hash, "
      "labels) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) "
      "ON CONFLICT (idempotency_key) DO NOTHING RETURNING id), "
      "s AS (INSERT INTO kernelscan.job_specs (job_id, spec) SELECT id, $14 FROM j), "
      "l AS (INSERT INTO kernelscan.job_labels (job_id, key, value) SELECT j.id, t.k, t.v "
      "FROM j, unnest($15::text[], $16::text[]) AS t(k, v)) "
      "SELECT id FROM j",
      {job.name, to_string(status), job.priority, to_string(job.engine), job.requested_device,
       job.op, std::int64_t(job.total_points), now_ms, finished_ms, finished_ms,
       job.idempotency_key, job.request_hash, detail::encode_labels(job.labels), job.spec_json,
       pg_array(keys), pg_array(values)});
  if (r.rows() == 1) return submit_outcome{r.int64(0, 0), true, false};
  // The key is taken (by a retry, or a concurrent first try that committed first).
  const auto known =
      c.exec("SELECT id, request_hash FROM kernelscan.jobs WHERE idempotency_key = $1",
             {job.idempotency_key});
  if (known.rows() != 1) throw storage_error("a job with this idempotency key vanished", true);
  return submit_outcome{known.int64(0, 0), false, known.text(0, 1) != job.request_hash};
}

submit_outcome postgres_job_store::submit(const job_submission& job, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  if (job.idempotency_key) {
    const auto known =
        c->exec("SELECT id, request_hash FROM kernelscan.jobs WHERE idempotency_key = $1",
                {*job.idempotency_key});
    if (known.rows() == 1) {
      return {known.int64(0, 0), false, known.text(0, 1) != job.request_hash};
    }
  }
  return *insert_job(*c, job, job_status::queued, now_ms, std::nullopt);
}

submit_outcome postgres_job_store::import_job(const job_submission& job,
                                              std::span<const result_row> rows,
                                              std::int64_t now_ms) {
  auto c = m_pool.acquire();
  pg_transaction tx(*c);
  const auto out = *insert_job(*c, job, job_status::succeeded, now_ms, now_ms);
  if (!out.created) return out;
  insert_rows(*c, rows, out.id, now_ms);
  tx.commit();
  return out;
}

std::optional<job_record> postgres_job_store::get(std::int64_t id) {
  auto c = m_pool.acquire();
  const auto r = c->exec("SELECT " + k_columns +
                             ", (SELECT spec FROM kernelscan.job_specs WHERE job_id = id) "
                             "FROM kernelscan.jobs WHERE id = $1",
                         {id});
  if (r.rows() == 0) return std::nullopt;
  job_record j = read_row(r, 0);
  j.spec_json = std::string(r.text(0, k_column_count));
  return j;
}

std::vector<job_record> postgres_job_store::list(const list_filter& filter) {
  std::vector<pg_param> params;
  std::string sql = "SELECT " + k_columns + " FROM kernelscan.jobs WHERE true";
  if (!filter.statuses.empty()) {
    std::vector<pg_param> names;
    for (auto st : filter.statuses)
      names.emplace_back(to_string(st));
    params.emplace_back(pg_array(names));
    sql += " AND status = ANY($" + std::to_string(params.size()) + "::text[])";
  }
  if (filter.before_id) {
    params.emplace_back(*filter.before_id);
    sql += " AND id < $" + std::to_string(params.size());
  }
  for (const auto& [k, v] : filter.labels) {
    params.emplace_back(k);
    params.emplace_back(v);
    sql += " AND id IN (SELECT job_id FROM kernelscan.job_labels WHERE key = $" +
           std::to_string(params.size() - 1) + " AND value = $" + std::to_string(params.size()) +
           ")";
  }
  params.emplace_back(std::int64_t(filter.limit));
  sql += " ORDER BY id DESC LIMIT $" + std::to_string(params.size());
  auto c = m_pool.acquire();
  const auto r = c->exec(sql, params);
  std::vector<job_record> out;
  out.reserve(std::size_t(r.rows()));
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(read_row(r, i));
  return out;
}

std::optional<std::string> postgres_job_store::spec_json(std::int64_t id) {
  auto c = m_pool.acquire();
  const auto r = c->exec("SELECT spec FROM kernelscan.job_specs WHERE job_id = $1", {id});
  if (r.rows() == 0) return std::nullopt;
  return std::string(r.text(0, 0));
}

std::optional<std::pair<std::int64_t, std::string>> postgres_job_store::find_by_idempotency_key(
    const std::string& key) {
  auto c = m_pool.acquire();
  const auto r =
      c->exec("SELECT id, request_hash FROM kernelscan.jobs WHERE idempotency_key = $1", {key});
  if (r.rows() == 0) return std::nullopt;
  return std::pair{r.int64(0, 0), std::string(r.text(0, 1))};
}

std::vector<pending_job> postgres_job_store::pending() {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT id, priority, engine, requested_device, status, cancel_requested "
      "FROM kernelscan.jobs WHERE status IN ('queued', 'running') ORDER BY id");
  std::vector<pending_job> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({r.int64(i, 0), int(r.int64(i, 1)), detail::parse_engine(r.text(i, 2)),
                   opt_int(r.opt_int64(i, 3)),
                   parse_job_status(r.text(i, 4)).value_or(job_status::queued), r.boolean(i, 5)});
  }
  return out;
}

bool postgres_job_store::start(std::int64_t id, int device, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  return c->exec(
              "UPDATE kernelscan.jobs SET status = 'running', device = $1, "
              "started_ms = coalesce(started_ms, $2) WHERE id = $3 AND status = 'queued'",
              {device, now_ms, id})
             .affected() == 1;
}

void postgres_job_store::requeue(std::int64_t id) {
  auto c = m_pool.acquire();
  c->exec("UPDATE kernelscan.jobs SET status = 'queued' WHERE id = $1 AND status = 'running'",
          {id});
}

void postgres_job_store::finish(std::int64_t id, job_status status,
                                const std::optional<point_error>& error, std::int64_t now_ms,
                                const std::optional<std::string>& fitness_json) {
  auto c = m_pool.acquire();
  c->exec(
      "UPDATE kernelscan.jobs SET status = $1, finished_ms = $2, error_type = $3, "
      "error_message = $4, fitness = $5 WHERE id = $6",
      {to_string(status), now_ms, error ? pg_param(error->type) : pg_param(nullptr),
       error ? pg_param(error->message) : pg_param(nullptr), fitness_json, id});
}

std::vector<scored_point> postgres_job_store::scored_points(std::int64_t job_id) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT status = 'ok', correct, combined_score, speedup, latency_score "
      "FROM kernelscan.results WHERE job_id = $1 ORDER BY idx",
      {job_id});
  std::vector<scored_point> out;
  out.reserve(std::size_t(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back(
        {r.boolean(i, 0), r.boolean(i, 1), r.real(i, 2), r.opt_real(i, 3), r.opt_real(i, 4)});
  }
  return out;
}

std::vector<std::string> postgres_job_store::result_flags(std::int64_t job_id) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT DISTINCT flags FROM kernelscan.results WHERE job_id = $1 AND flags <> ''", {job_id});
  std::set<std::string> flags;
  for (int i = 0; i < r.rows(); ++i) {
    for (auto& f : detail::split_flags(r.text(i, 0)))
      flags.insert(std::move(f));
  }
  return {flags.begin(), flags.end()};
}

void postgres_job_store::set_cache_key(std::int64_t id, const std::string& key) {
  auto c = m_pool.acquire();
  c->exec("UPDATE kernelscan.jobs SET cache_key = $1 WHERE id = $2", {key, id});
}

std::optional<std::int64_t> postgres_job_store::find_cached(const std::string& key,
                                                            std::int64_t except_id) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT id FROM kernelscan.jobs WHERE cache_key = $1 AND id <> $2 AND "
      "status = 'succeeded' AND done_points = total_points ORDER BY id DESC LIMIT 1",
      {key, except_id});
  if (r.rows() == 0) return std::nullopt;
  return r.int64(0, 0);
}

std::int64_t postgres_job_store::copy_cached_results(std::int64_t from, std::int64_t to,
                                                     std::int64_t now_ms) {
  auto c = m_pool.acquire();
  pg_transaction tx(*c);
  std::int64_t origin = from;  // a cached job's own results came from an earlier one
  const auto o =
      c->exec("SELECT coalesce(cached_from, id) FROM kernelscan.jobs WHERE id = $1", {from});
  if (o.rows() == 1) origin = o.int64(0, 0);
  c->exec(
      "INSERT INTO kernelscan.results (job_id, idx, status, median_us, params, result, "
      "created_ms, correct, combined_score, speedup, latency_score, flags, cache_origin) "
      "SELECT $1, idx, status, median_us, params, result, $3, correct, combined_score, speedup, "
      "latency_score, flags, $2 FROM kernelscan.results WHERE job_id = $4 "
      "ON CONFLICT DO NOTHING",
      {to, origin, now_ms, from});
  c->exec(
      "UPDATE kernelscan.jobs SET (done_points, ok_points, failed_points, best_index, "
      "best_median_us, best_params) = (SELECT done_points, ok_points, failed_points, best_index, "
      "best_median_us, best_params FROM kernelscan.jobs WHERE id = $1), cached_from = $2 "
      "WHERE id = $3",
      {from, origin, to});
  tx.commit();
  return origin;
}

std::optional<std::string> postgres_job_store::roofline(const std::string& device_key) {
  auto c = m_pool.acquire();
  const auto r = c->exec("SELECT roofline FROM kernelscan.device_rooflines WHERE device_key = $1",
                         {device_key});
  if (r.rows() == 0) return std::nullopt;
  return std::string(r.text(0, 0));
}

void postgres_job_store::put_roofline(const std::string& device_key,
                                      const std::string& roofline_json, std::int64_t measured_ms) {
  auto c = m_pool.acquire();
  c->exec(
      "INSERT INTO kernelscan.device_rooflines (device_key, roofline, measured_ms) "
      "VALUES ($1, $2, $3) ON CONFLICT (device_key) DO UPDATE SET roofline = excluded.roofline, "
      "measured_ms = excluded.measured_ms",
      {device_key, roofline_json, measured_ms});
}

cancel_outcome postgres_job_store::cancel(std::int64_t id, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  pg_transaction tx(*c);
  const auto r = c->exec("SELECT status FROM kernelscan.jobs WHERE id = $1 FOR UPDATE", {id});
  if (r.rows() == 0) return cancel_outcome::not_found;
  const auto status = r.text(0, 0);
  cancel_outcome out;
  if (status == "queued") {
    c->exec(
        "UPDATE kernelscan.jobs SET status = 'cancelled', cancel_requested = true, "
        "finished_ms = $1, error_type = 'cancelled', "
        "error_message = 'cancelled before it started' WHERE id = $2",
        {now_ms, id});
    out = cancel_outcome::cancelled;
  } else if (status == "running") {
    c->exec("UPDATE kernelscan.jobs SET cancel_requested = true WHERE id = $1", {id});
    out = cancel_outcome::requested;
  } else {
    return cancel_outcome::already_finished;
  }
  tx.commit();
  return out;
}

void postgres_job_store::insert_rows(pg_connection& c, std::span<const result_row> rows,
                                     std::optional<std::int64_t> job_id, std::int64_t now_ms) {
  if (rows.empty()) return;
  std::vector<pg_param> ids, idx, status, median, params, result, correct, score, speedup, latency,
      flags;
  for (const auto& row : rows) {
    ids.emplace_back(job_id.value_or(row.job_id));
    idx.emplace_back(std::int64_t(row.index));
    status.emplace_back(row.ok ? "ok" : "failed");
    median.emplace_back(row.median_us);
    params.emplace_back(row.params_json);
    result.emplace_back(row.result_json);
    correct.emplace_back(row.score.correct);
    score.emplace_back(row.score.combined_score);
    speedup.emplace_back(row.score.speedup);
    latency.emplace_back(row.score.latency_score);
    flags.emplace_back(detail::join_flags(row.flags));
  }
  c.exec(k_insert_rows, {pg_array(ids), pg_array(idx), pg_array(status), pg_array(median),
                         pg_array(params), pg_array(result), pg_array(correct), pg_array(score),
                         pg_array(speedup), pg_array(latency), pg_array(flags), now_ms});
}

void postgres_job_store::add_results(std::span<const result_row> rows, std::int64_t now_ms) {
  if (rows.empty()) return;
  auto c = m_pool.acquire();
  insert_rows(*c, rows, std::nullopt, now_ms);  // one statement: one transaction
}

std::vector<std::uint64_t> postgres_job_store::result_indices(std::int64_t job_id) {
  auto c = m_pool.acquire();
  const auto r =
      c->exec("SELECT idx FROM kernelscan.results WHERE job_id = $1 ORDER BY idx", {job_id});
  std::vector<std::uint64_t> out;
  out.reserve(std::size_t(r.rows()));
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(std::uint64_t(r.int64(i, 0)));
  return out;
}

std::vector<stored_result> postgres_job_store::results(std::int64_t job_id, std::uint64_t offset,
                                                       std::uint64_t limit) {
  auto c = m_pool.acquire();
  // OFFSET counts rows, not indices: a job still running may have gaps in idx.
  return read_results(
      c->exec("SELECT idx, params, result, cache_origin FROM kernelscan.results WHERE job_id = $1 "
              "ORDER BY idx LIMIT $2 OFFSET $3",
              {job_id, clamp_limit(limit), clamp_limit(offset)}));
}

std::vector<stored_result> postgres_job_store::results_after(std::int64_t job_id,
                                                             std::uint64_t after_index,
                                                             std::uint64_t limit) {
  auto c = m_pool.acquire();
  return read_results(
      c->exec("SELECT idx, params, result, cache_origin FROM kernelscan.results WHERE job_id = $1 "
              "AND idx > $2 ORDER BY idx LIMIT $3",
              {job_id, clamp_limit(after_index), clamp_limit(limit)}));
}

std::map<job_status, std::int64_t> postgres_job_store::count_by_status() {
  auto c = m_pool.acquire();
  const auto r = c->exec("SELECT status, count(*) FROM kernelscan.jobs GROUP BY status");
  std::map<job_status, std::int64_t> out;
  for (int i = 0; i < r.rows(); ++i) {
    if (auto st = parse_job_status(r.text(i, 0))) out[*st] = r.int64(i, 1);
  }
  return out;
}

void postgres_job_store::ping() {
  auto c = m_pool.acquire();
  c->exec("SELECT id FROM kernelscan.jobs ORDER BY id DESC LIMIT 1");
}

std::vector<store_metric> postgres_job_store::metrics() {
  return {{"kernelscan_database_connections", "Open connections to PostgreSQL.", "gauge",
           double(m_pool.open())},
          {"kernelscan_database_connects_total",
           "Connections made to PostgreSQL since the daemon started (more than the pool size: "
           "reconnects).",
           "counter", double(m_pool.connects())}};
}

}  // namespace kernelscan
