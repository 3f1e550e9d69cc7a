#include "storage/postgres_job_store.hpp"

#include <spdlog/spdlog.h>

#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <set>
#include <thread>

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

// The channel nodes announce events on.
constexpr const char* k_channel = "kernelscan_events";
// PostgreSQL's limit on a notification's payload is 8000 bytes.
constexpr std::size_t k_max_payload = 7900;

// The advisory lock that holds a node's name: a 64-bit hash of it.
std::int64_t node_lock_key(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : "kernelscan-node:" + name) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return std::int64_t(h);
}

// A running job put back: queued again, or cancelled when a cancel was asked for meanwhile.
const std::string k_release =
    "status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END, "
    "finished_ms = CASE WHEN cancel_requested THEN $1 ELSE finished_ms END, "
    "error_type = CASE WHEN cancel_requested THEN 'cancelled' ELSE error_type END, "
    "error_message = CASE WHEN cancel_requested THEN $2 ELSE error_message END, "
    "lease_expires_at = NULL";

job_record read_row(const pg_result& r, int i) {
  job_record j;
  j.id = r.int64(i, 0);
  j.name = std::string(r.text(i, 1));
  j.status = parse_job_status(r.text(i, 2)).value_or(job_status::failed);
  j.priority = int(r.int64(i, 3));
  j.engine = detail::parse_engine(r.text(i, 4));
  j.requested_device = detail::opt_int(r.opt_int64(i, 5));
  j.device = detail::opt_int(r.opt_int64(i, 6));
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
  if (!r.is_null(i, 24)) j.node = std::string(r.text(i, 24));
  j.requested_node = r.opt_text(i, 25);
  j.requested_model = r.opt_text(i, 26);
  if (!r.is_null(i, 27)) j.variants_json = std::string(r.text(i, 27));
  j.task = r.opt_text(i, 28);
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
// counted), and each job's best point of the batch (the lowest cost) replaces its best if its
// cost is lower. Ties go to the earlier row, as when rows are stored one at a time. A batch may
// hold a point twice (a node that kept points in memory while the database was away, then
// measured them again after resuming the job): its first copy alone is stored and counted, as
// when rows are stored one at a time; counting the rows the insert skipped would push the
// progress past the job's total.
const std::string k_insert_rows = R"sql(
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::float8[], $5::text[],
                       $6::text[], $7::boolean[], $8::float8[], $9::float8[], $10::float8[],
                       $11::text[], $13::text[], $14::bigint[], $15::float8[])
    WITH ORDINALITY AS t(job_id, idx, status, median_us, params, result, correct,
                         combined_score, speedup, latency_score, flags, variant, point, cost, ord)
), once AS (
  SELECT DISTINCT ON (job_id, idx) * FROM input ORDER BY job_id, idx, ord
), inserted AS (
  INSERT INTO kernelscan.results (job_id, idx, status, median_us, params, result, created_ms,
                                  correct, combined_score, speedup, latency_score, flags, variant)
  SELECT job_id, idx, status, median_us, params, result, $12, correct, combined_score, speedup,
         latency_score, flags, variant
  FROM once WHERE EXISTS (SELECT 1 FROM kernelscan.jobs j WHERE j.id = once.job_id)
  ORDER BY ord
  ON CONFLICT DO NOTHING
  RETURNING job_id, idx
), fresh AS (
  SELECT o.* FROM once o JOIN inserted n ON n.job_id = o.job_id AND n.idx = o.idx
), counts AS (
  SELECT job_id, count(*) AS n, count(*) FILTER (WHERE status = 'ok') AS ok
  FROM fresh GROUP BY job_id
), best AS (
  SELECT DISTINCT ON (job_id) job_id, coalesce(point, idx) AS idx, median_us, params, cost
  FROM fresh WHERE status = 'ok' AND median_us IS NOT NULL AND cost IS NOT NULL
  ORDER BY job_id, cost, ord
)
UPDATE kernelscan.jobs j SET
  done_points = j.done_points + c.n,
  ok_points = j.ok_points + c.ok,
  failed_points = j.failed_points + (c.n - c.ok),
  best_index = CASE WHEN b.cost IS NOT NULL AND (j.best_cost IS NULL OR
               b.cost < j.best_cost) THEN b.idx ELSE j.best_index END,
  best_params = CASE WHEN b.cost IS NOT NULL AND (j.best_cost IS NULL OR
                b.cost < j.best_cost) THEN b.params ELSE j.best_params END,
  best_median_us = CASE WHEN b.cost IS NOT NULL AND (j.best_cost IS NULL OR
                   b.cost < j.best_cost) THEN b.median_us ELSE j.best_median_us END,
  best_cost = CASE WHEN b.cost IS NOT NULL AND (j.best_cost IS NULL OR
              b.cost < j.best_cost) THEN b.cost ELSE j.best_cost END
FROM counts c LEFT JOIN best b ON b.job_id = c.job_id
WHERE j.id = c.job_id
)sql";

}  // namespace

std::int64_t postgres_node_lock_key(const std::string& name) {
  return node_lock_key(name);
}

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

// The node's own connection, on a thread of its own: it holds the advisory lock on the node's
// name, LISTENs on the events channel and sends what publish_event() queued. When the
// connection is lost it reconnects every second and takes the lock and the LISTEN again.
class postgres_job_store::session {
 public:
  session(const detail::pg_pool& pool, std::string node, std::string instance,
          std::function<void(const store_event&)> on_event)
      : m_pool(pool),
        m_node(std::move(node)),
        m_instance(std::move(instance)),
        m_on_event(std::move(on_event)) {
    m_conn = open(true);
    m_thread = std::thread([this] { run(); });
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() {
    m_stopping = true;
    m_cv.notify_all();
    m_thread.join();
  }

  void publish(const store_event& e) {
    std::string payload = m_instance + "\n" + e.type + "\n" + e.data;
    if (payload.size() > k_max_payload) {
      spdlog::warn("event {} not sent to other nodes: {} bytes is over PostgreSQL's limit", e.type,
                   payload.size());
      return;
    }
    std::lock_guard lock(m_mutex);
    if (m_outbox.size() >= 10000) m_outbox.pop_front();  // the server is away: drop the oldest
    m_outbox.push_back(std::move(payload));
  }

 private:
  // Connects, takes the name's lock (at start-up, failing to is a conflict; later it is
  // logged) and LISTENs.
  std::unique_ptr<pg_connection> open(bool starting) {
    auto c = m_pool.connect();
    // The server learns within half a minute that this connection died with its machine (by
    // default it would wait two hours of TCP keep-alive), and frees the node's name for the
    // node's next start.
    c->exec_script(
        "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; "
        "SET tcp_keepalives_count = 3");
    const bool locked =
        c->exec("SELECT pg_try_advisory_lock($1)", {node_lock_key(m_node)}).boolean(0, 0);
    if (!locked) {
      const std::string msg = "another live daemon is node \"" + m_node +
                              "\" of this database (give each a name of its own with --node)";
      if (starting) throw node_conflict(msg);
      // Cut off long enough for the server to free the name, this daemon finds another one
      // holding it: as two nodes of one name they would take each other's jobs and overwrite
      // each other's devices. The owner decides (the daemon stops); the PostgreSQL connection
      // is not back.
      deliver({"name_lost", msg});
      throw node_conflict(msg);
    }
    c->exec_script(std::string("LISTEN ") + k_channel);
    return c;
  }

  void run() {
    bool reported = false;
    while (!m_stopping) {
      try {
        if (!m_conn) {
          m_conn = open(false);
          spdlog::info("storage: the node's PostgreSQL session is back");
          reported = false;
          // What other nodes announced meanwhile never reached this node.
          deliver({"reset", "{}"});
        }
        send();
        receive();
      } catch (const std::exception& e) {
        m_conn.reset();
        if (!reported) {
          spdlog::warn("storage: the node's PostgreSQL session is lost ({}); reconnecting",
                       e.what());
          reported = true;
        }
        std::unique_lock lock(m_mutex);
        m_cv.wait_for(lock, std::chrono::seconds(1), [this] { return m_stopping.load(); });
      }
    }
  }

  void send() {
    std::vector<pg_param> batch;
    {
      std::lock_guard lock(m_mutex);
      while (!m_outbox.empty() && batch.size() < 256) {
        batch.emplace_back(std::move(m_outbox.front()));
        m_outbox.pop_front();
      }
    }
    if (batch.empty()) return;
    m_conn->exec("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                 {k_channel, pg_array(batch)});
  }

  // Waits up to 20 ms for notifications and hands those of other nodes on.
  void receive() {
    pollfd fd{m_conn->socket(), POLLIN, 0};
    if (::poll(&fd, 1, 20) < 0) return;
    for (auto& n : m_conn->notifications()) {
      const auto first = n.payload.find('\n');
      const auto second = n.payload.find('\n', first == std::string::npos ? first : first + 1);
      if (second == std::string::npos) continue;
      if (n.payload.compare(0, first, m_instance) == 0) continue;  // our own
      deliver({n.payload.substr(first + 1, second - first - 1), n.payload.substr(second + 1)});
    }
  }

  void deliver(const store_event& e) {
    if (!m_on_event) return;
    try {
      m_on_event(e);
    } catch (const std::exception& ex) {
      spdlog::warn("storage: an event from another node was not handled: {}", ex.what());
    }
  }

  const detail::pg_pool& m_pool;
  const std::string m_node;
  const std::string m_instance;
  const std::function<void(const store_event&)> m_on_event;
  std::unique_ptr<pg_connection> m_conn;
  std::atomic<bool> m_stopping{false};
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::string> m_outbox;
  std::thread m_thread;
};

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
      "labels, place_node, place_model, task, needs, agent) VALUES ($1, $2, $3, $4, $5, $6, $7, "
      "$8, $9, $10, $11, $12, $13, $17, $18, $19, $20, $21) "
      "ON CONFLICT (idempotency_key) DO NOTHING RETURNING id), "
      "s AS (INSERT INTO kernelscan.job_specs (job_id, spec) SELECT id, $14 FROM j), "
      "l AS (INSERT INTO kernelscan.job_labels (job_id, key, value) SELECT j.id, t.k, t.v "
      "FROM j, unnest($15::text[], $16::text[]) AS t(k, v)) "
      "SELECT id FROM j",
      {job.name,
       to_string(status),
       job.priority,
       to_string(job.engine),
       job.requested_device,
       job.op,
       std::int64_t(job.total_points),
       now_ms,
       finished_ms,
       finished_ms,
       job.idempotency_key,
       job.request_hash,
       detail::encode_labels(job.labels),
       job.spec_json,
       pg_array(keys),
       pg_array(values),
       job.requested_node,
       job.requested_model,
       job.task,
       std::int64_t(job.needs),
       job.agent});
  if (r.rows() == 1) return submit_outcome::stored(r.int64(0, 0));
  // The key is taken (by a retry, or a concurrent first try that committed first).
  const auto known =
      c.exec("SELECT id, request_hash FROM kernelscan.jobs WHERE idempotency_key = $1",
             {job.idempotency_key});
  if (known.rows() != 1) throw storage_error("a job with this idempotency key vanished", true);
  return submit_outcome::known(known.int64(0, 0), known.text(0, 1) != job.request_hash);
}

namespace {

agent_count count_agent(pg_connection& c, const std::string& task, const std::string& agent,
                        std::int64_t since_ms) {
  const auto r = c.exec(
      "SELECT COUNT(*), MIN(created_ms) FROM ("
      "SELECT created_ms FROM kernelscan.jobs WHERE task = $1 AND agent = $2 AND created_ms >= $3 "
      "UNION ALL SELECT created_ms FROM kernelscan.deleted_submissions "
      "WHERE task = $1 AND agent = $2 AND created_ms >= $3) counted",
      {task, agent, since_ms});
  return {r.int64(0, 0), r.opt_int64(0, 1)};
}

}  // namespace

agent_count postgres_job_store::agent_submissions(const std::string& task, const std::string& agent,
                                                  std::int64_t since_ms) {
  auto c = m_pool.acquire();
  return count_agent(*c, task, agent, since_ms);
}

submit_outcome postgres_job_store::submit(const job_submission& job, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  if (job.idempotency_key) {
    const auto known =
        c->exec("SELECT id, request_hash FROM kernelscan.jobs WHERE idempotency_key = $1",
                {*job.idempotency_key});
    if (known.rows() == 1) {
      return submit_outcome::known(known.int64(0, 0), known.text(0, 1) != job.request_hash);
    }
  }
  if (!job.task) return *insert_job(*c, job, job_status::queued, now_ms, std::nullopt);
  // The task's row is locked until the job is stored: a retire waits for it, or went first.
  pg_transaction tx(*c);
  const auto task = c->exec(
      "SELECT retired_ms IS NOT NULL FROM kernelscan.tasks WHERE name = $1 FOR SHARE", {*job.task});
  if (task.rows() == 1 && task.boolean(0, 0)) return submit_outcome::retired();
  if (job.agent && job.agent_bound) {
    // One agent's submissions to one task are counted and stored one at a time, on every node.
    c->exec("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", {*job.task, *job.agent});
    const agent_count counted = count_agent(*c, *job.task, *job.agent, job.agent_bound->since_ms);
    if (counted.jobs >= job.agent_bound->limit) return submit_outcome::bounded(counted);
  }
  const auto out = *insert_job(*c, job, job_status::queued, now_ms, std::nullopt);
  tx.commit();
  return out;
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

bool postgres_job_store::exists(std::int64_t id) {
  auto c = m_pool.acquire();
  return c->exec("SELECT 1 FROM kernelscan.jobs WHERE id = $1", {id}).rows() == 1;
}

std::optional<job_record> postgres_job_store::get(std::int64_t id) {
  auto c = m_pool.acquire();
  const auto r = c->exec("SELECT " + detail::k_columns +
                             ", (SELECT spec FROM kernelscan.job_specs WHERE job_id = id) "
                             "FROM kernelscan.jobs WHERE id = $1",
                         {id});
  if (r.rows() == 0) return std::nullopt;
  job_record j = read_row(r, 0);
  j.spec_json = std::string(r.text(0, detail::k_column_count));
  return j;
}

std::vector<job_record> postgres_job_store::list(const list_filter& filter) {
  std::vector<pg_param> params;
  std::string sql = "SELECT " + detail::k_columns + " FROM kernelscan.jobs WHERE true";
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
  if (filter.task) {
    params.emplace_back(*filter.task);
    sql += " AND task = $" + std::to_string(params.size());
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

namespace {

// Row i of a "SELECT name, description, template, created_ms, retired_ms FROM tasks" query.
task_record read_task(const pg_result& r, int i) {
  return {std::string(r.text(i, 0)), std::string(r.text(i, 1)), std::string(r.text(i, 2)),
          r.int64(i, 3), r.opt_int64(i, 4)};
}

}  // namespace

bool postgres_job_store::create_task(const task_record& task) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "INSERT INTO kernelscan.tasks (name, description, template, created_ms, retired_ms) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING name",
      {task.name, task.description, task.template_json, task.created_ms, task.retired_ms});
  return r.rows() == 1;
}

std::optional<task_record> postgres_job_store::task(const std::string& name) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT name, description, template, created_ms, retired_ms FROM kernelscan.tasks "
      "WHERE name = $1",
      {name});
  if (r.rows() == 0) return std::nullopt;
  return read_task(r, 0);
}

std::vector<task_record> postgres_job_store::tasks() {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT name, description, template, created_ms, retired_ms FROM kernelscan.tasks "
      "ORDER BY name",
      {});
  std::vector<task_record> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(read_task(r, i));
  return out;
}

retire_outcome postgres_job_store::retire_task(const std::string& name, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  // One statement: the row as it was (locked), and the update where it was live.
  const auto r = c->exec(
      "WITH old AS (SELECT retired_ms FROM kernelscan.tasks WHERE name = $1 FOR UPDATE), "
      "upd AS (UPDATE kernelscan.tasks SET retired_ms = $2 WHERE name = $1 AND retired_ms IS "
      "NULL RETURNING name) SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM old)",
      {name, now_ms});
  if (r.int64(0, 0) == 1) return retire_outcome::retired;
  return r.int64(0, 1) == 1 ? retire_outcome::already_retired : retire_outcome::not_found;
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

std::optional<claimed_job> postgres_job_store::claim(const claim_request& request) {
  auto c = m_pool.acquire();
  // SKIP LOCKED: nodes claiming at once each take a different job instead of queueing on the
  // first one's row lock.
  const auto r = c->exec(
      "WITH next AS (SELECT id FROM kernelscan.jobs WHERE status = 'queued' AND "
      "(engine = 'auto' OR engine = $5) AND (requested_device IS NULL OR "
      "requested_device = $2) AND (place_node IS NULL OR place_node = $1) AND "
      "(place_model IS NULL OR place_model = $6) AND (needs & $7) = 0 "
      "ORDER BY priority DESC, id LIMIT 1 "
      "FOR UPDATE SKIP LOCKED) "
      "UPDATE kernelscan.jobs j SET status = 'running', node = $1, device = $2, "
      "started_ms = coalesce(j.started_ms, $3), attempt = j.attempt + 1, "
      "lease_expires_at = now() + $4 * interval '1 millisecond' FROM next WHERE j.id = next.id "
      "RETURNING j.id, j.attempt, j.cancel_requested, "
      "(SELECT spec FROM kernelscan.job_specs WHERE job_id = j.id)",
      {request.node, request.device, request.now_ms, request.lease_ms, request.engine,
       request.model, std::int64_t(request.lacks)});
  if (r.rows() == 0) return std::nullopt;
  claimed_job out;
  out.lease = {r.int64(0, 0), r.int64(0, 1)};
  out.cancel_requested = r.boolean(0, 2);
  out.spec_json = std::string(r.text(0, 3));
  return out;
}

lease_renewal postgres_job_store::renew_leases(const std::string& node,
                                               std::span<const job_lease> held,
                                               std::int64_t lease_ms, std::int64_t) {
  lease_renewal out;
  if (held.empty()) return out;
  std::vector<pg_param> ids, attempts;
  for (const auto& l : held) {
    ids.emplace_back(l.job_id);
    attempts.emplace_back(l.attempt);
  }
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "UPDATE kernelscan.jobs j SET lease_expires_at = now() + $2 * interval '1 millisecond' "
      "FROM unnest($3::bigint[], $4::bigint[]) AS h(id, attempt) WHERE j.id = h.id AND "
      "j.attempt = h.attempt AND j.node = $1 AND j.status = 'running' "
      "RETURNING j.id, j.cancel_requested",
      {node, lease_ms, pg_array(ids), pg_array(attempts)});
  std::set<std::int64_t> kept;
  for (int i = 0; i < r.rows(); ++i) {
    kept.insert(r.int64(i, 0));
    if (r.boolean(i, 1)) out.cancel_requested.push_back(r.int64(i, 0));
  }
  for (const auto& l : held) {
    if (!kept.count(l.job_id)) out.lost.push_back(l.job_id);
  }
  return out;
}

std::vector<std::int64_t> postgres_job_store::expire_leases(std::int64_t now_ms) {
  auto c = m_pool.acquire();
  const auto r = c->exec("UPDATE kernelscan.jobs SET " + k_release +
                             " WHERE status = 'running' AND lease_expires_at < now() RETURNING id",
                         {now_ms, "cancelled while its node was unreachable"});
  std::vector<std::int64_t> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(r.int64(i, 0));
  return out;
}

std::vector<std::int64_t> postgres_job_store::recover_node(const std::string& node,
                                                           std::int64_t now_ms) {
  auto c = m_pool.acquire();
  const auto r = c->exec("UPDATE kernelscan.jobs SET " + k_release +
                             " WHERE status = 'running' AND node = $3 RETURNING id",
                         {now_ms, "cancelled while the daemon was down", node});
  std::vector<std::int64_t> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(r.int64(i, 0));
  return out;
}

bool postgres_job_store::requeue(const std::string& node, const job_lease& lease) {
  auto c = m_pool.acquire();
  return c->exec(
              "UPDATE kernelscan.jobs SET status = 'queued', lease_expires_at = NULL "
              "WHERE id = $1 AND node = $2 AND attempt = $3 AND status = 'running'",
              {lease.job_id, node, lease.attempt})
             .affected() == 1;
}

bool postgres_job_store::finish(const std::string& node, const job_lease& lease, job_status status,
                                const std::optional<point_error>& error, std::int64_t now_ms,
                                const std::optional<std::string>& fitness_json,
                                const std::optional<std::string>& variants_json) {
  auto c = m_pool.acquire();
  return c->exec(
              "UPDATE kernelscan.jobs SET status = $1, finished_ms = $2, error_type = $3, "
              "error_message = $4, fitness = $5, lease_expires_at = NULL, variants_summary = $9 "
              "WHERE id = $6 AND node = $7 AND attempt = $8 AND status = 'running'",
              {to_string(status), now_ms, error ? pg_param(error->type) : pg_param(nullptr),
               error ? pg_param(error->message) : pg_param(nullptr), fitness_json, lease.job_id,
               node, lease.attempt, variants_json})
             .affected() == 1;
}

bool postgres_job_store::set_fitness(std::int64_t job_id, const std::string& fitness_json) {
  auto c = m_pool.acquire();
  return c->exec(
              "UPDATE kernelscan.jobs SET fitness = $1 WHERE id = $2 AND status IN "
              "('succeeded', 'failed', 'cancelled')",
              {fitness_json, job_id})
             .affected() == 1;
}

std::vector<scored_point> postgres_job_store::scored_points(std::int64_t job_id) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT status = 'ok', correct, combined_score, speedup, latency_score, "
      "coalesce((result::jsonb ->> 'simulated')::boolean, false), idx, flags "
      "FROM kernelscan.results WHERE job_id = $1 ORDER BY idx",
      {job_id});
  std::vector<scored_point> out;
  out.reserve(std::size_t(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({r.boolean(i, 0), r.boolean(i, 1), r.real(i, 2), r.opt_real(i, 3),
                   r.opt_real(i, 4), r.boolean(i, 5), std::uint64_t(r.int64(i, 6)),
                   detail::split_flags(r.text(i, 7))});
  }
  return out;
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

std::optional<std::int64_t> postgres_job_store::copy_cached_results(std::int64_t from,
                                                                    std::int64_t to,
                                                                    std::int64_t now_ms) {
  auto c = m_pool.acquire();
  pg_transaction tx(*c);
  // Locked, so that it is not deleted while its rows are copied.
  const auto o = c->exec(
      "SELECT coalesce(cached_from, id) FROM kernelscan.jobs WHERE id = $1 FOR SHARE", {from});
  if (o.rows() != 1) return std::nullopt;     // deleted since it was found
  const std::int64_t origin = o.int64(0, 0);  // a cached job's own results came from an earlier one
  c->exec(
      "INSERT INTO kernelscan.results (job_id, idx, status, median_us, params, result, "
      "created_ms, correct, combined_score, speedup, latency_score, flags, cache_origin, variant) "
      "SELECT $1, idx, status, median_us, params, result, $3, correct, combined_score, speedup, "
      "latency_score, flags, $2, variant FROM kernelscan.results WHERE job_id = $4 "
      "ON CONFLICT DO NOTHING",
      {to, origin, now_ms, from});
  c->exec(
      "UPDATE kernelscan.jobs SET (done_points, ok_points, failed_points, best_index, "
      "best_median_us, best_params, best_cost) = (SELECT done_points, ok_points, failed_points, "
      "best_index, best_median_us, best_params, best_cost FROM kernelscan.jobs WHERE id = $1), "
      "cached_from = $2 WHERE id = $3",
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

delete_outcome postgres_job_store::delete_job(std::int64_t id) {
  auto c = m_pool.acquire();
  pg_transaction tx(*c);
  const auto r = c->exec(
      "SELECT status, task, agent, created_ms FROM kernelscan.jobs WHERE id = $1 FOR UPDATE", {id});
  if (r.rows() == 0) return delete_outcome::not_found;
  const auto status = parse_job_status(std::string(r.text(0, 0)));
  if (!status || !is_terminal(*status)) return delete_outcome::not_finished;
  const auto task = r.opt_text(0, 1);
  const auto agent = r.opt_text(0, 2);
  if (task && agent) {
    c->exec(
        "INSERT INTO kernelscan.deleted_submissions (task, agent, created_ms) "
        "VALUES ($1, $2, $3)",
        {*task, *agent, r.int64(0, 3)});
  }
  c->exec("DELETE FROM kernelscan.jobs WHERE id = $1", {id});  // its rows go with it (cascade)
  tx.commit();
  ++m_deleted;
  return delete_outcome::deleted;
}

std::vector<std::int64_t> postgres_job_store::ended_before(std::int64_t before_ms,
                                                           std::size_t limit) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT id FROM kernelscan.jobs WHERE status IN ('succeeded', 'failed', 'cancelled') AND "
      "finished_ms < $1 ORDER BY finished_ms, id LIMIT $2",
      {before_ms, std::int64_t(limit)});
  std::vector<std::int64_t> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(r.int64(i, 0));
  return out;
}

void postgres_job_store::insert_rows(pg_connection& c, std::span<const result_row> rows,
                                     std::optional<std::int64_t> job_id, std::int64_t now_ms) {
  if (rows.empty()) return;
  std::vector<pg_param> ids, idx, status, median, params, result, correct, score, speedup, latency,
      flags, variant, point, cost;
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
    variant.emplace_back(row.variant);
    point.emplace_back(row.point ? std::optional<std::int64_t>(std::int64_t(*row.point))
                                 : std::nullopt);
    cost.emplace_back(best_cost(row));
  }
  c.exec(k_insert_rows, {pg_array(ids), pg_array(idx), pg_array(status), pg_array(median),
                         pg_array(params), pg_array(result), pg_array(correct), pg_array(score),
                         pg_array(speedup), pg_array(latency), pg_array(flags), now_ms,
                         pg_array(variant), pg_array(point), pg_array(cost)});
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

void postgres_job_store::join(const node_record& node, std::int64_t) {
  if (m_session) throw std::logic_error("join: this store has joined as a node already");
  m_session = std::make_unique<session>(m_pool, node.name, node.instance, m_on_event);
  auto c = m_pool.acquire();
  c->exec(
      "INSERT INTO kernelscan.nodes (name, instance, version, started_ms, heartbeat_at) "
      "VALUES ($1, $2, $3, $4, now()) ON CONFLICT (name) DO UPDATE SET instance = $2, "
      "version = $3, started_ms = $4, heartbeat_at = now(), stopped_ms = NULL",
      {node.name, node.instance, node.version, node.started_ms});
}

void postgres_job_store::heartbeat(const std::string& node, std::span<const device_record> devices,
                                   std::int64_t) {
  std::vector<pg_param> idx, engine, model, state, job, info;
  for (const auto& d : devices) {
    idx.emplace_back(d.index);
    engine.emplace_back(d.engine);
    model.emplace_back(d.model);
    state.emplace_back(d.state);
    job.emplace_back(d.current_job);
    info.emplace_back(d.info_json);
  }
  auto c = m_pool.acquire();
  c->exec(
      "WITH n AS (UPDATE kernelscan.nodes SET heartbeat_at = now() WHERE name = $1), "
      "gone AS (DELETE FROM kernelscan.devices WHERE node = $1 AND NOT (idx = ANY($2::int[]))) "
      "INSERT INTO kernelscan.devices (node, idx, engine, model, state, current_job, info) "
      "SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[], "
      "$7::text[]) ON CONFLICT (node, idx) DO UPDATE SET engine = excluded.engine, "
      "model = excluded.model, state = excluded.state, current_job = excluded.current_job, "
      "info = excluded.info",
      {node, pg_array(idx), pg_array(engine), pg_array(model), pg_array(state), pg_array(job),
       pg_array(info)});
}

void postgres_job_store::leave(const std::string& node, std::int64_t now_ms) {
  auto c = m_pool.acquire();
  c->exec("UPDATE kernelscan.nodes SET stopped_ms = $2 WHERE name = $1", {node, now_ms});
}

std::vector<node_record> postgres_job_store::nodes(std::int64_t) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT name, instance, version, started_ms, "
      "(extract(epoch FROM now() - heartbeat_at) * 1000)::bigint, stopped_ms IS NOT NULL "
      "FROM kernelscan.nodes ORDER BY name");
  std::vector<node_record> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({std::string(r.text(i, 0)), std::string(r.text(i, 1)), std::string(r.text(i, 2)),
                   r.int64(i, 3), r.int64(i, 4), r.boolean(i, 5)});
  }
  return out;
}

std::vector<device_record> postgres_job_store::devices(std::int64_t) {
  auto c = m_pool.acquire();
  const auto r = c->exec(
      "SELECT d.node, d.idx, d.engine, d.model, d.state, d.current_job, d.info, "
      "(extract(epoch FROM now() - n.heartbeat_at) * 1000)::bigint, n.stopped_ms IS NOT NULL "
      "FROM kernelscan.devices d JOIN kernelscan.nodes n ON n.name = d.node "
      "ORDER BY d.node, d.idx");
  std::vector<device_record> out;
  for (int i = 0; i < r.rows(); ++i) {
    device_record d;
    d.node = std::string(r.text(i, 0));
    d.index = int(r.int64(i, 1));
    d.engine = std::string(r.text(i, 2));
    d.model = std::string(r.text(i, 3));
    d.state = std::string(r.text(i, 4));
    d.current_job = r.opt_int64(i, 5);
    d.info_json = std::string(r.text(i, 6));
    d.heartbeat_age_ms = r.int64(i, 7);
    d.node_stopped = r.boolean(i, 8);
    out.push_back(std::move(d));
  }
  return out;
}

void postgres_job_store::publish_event(const store_event& event) {
  if (m_session) m_session->publish(event);
}

void postgres_job_store::subscribe(std::function<void(const store_event&)> on_event) {
  if (m_session) throw std::logic_error("subscribe: call it before join");
  m_on_event = std::move(on_event);
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
           "counter", double(m_pool.connects())},
          detail::deleted_jobs_metric(m_deleted.load())};
}

}  // namespace kernelscan
