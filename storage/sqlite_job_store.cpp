#include "storage/sqlite_job_store.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <set>
#include <thread>

#include "storage/detail/store_text.hpp"
#include "storage/sqlite_migrations.hpp"

namespace kernelscan {
namespace {

using detail::decode_labels;
using detail::encode_labels;
using detail::parse_engine;

// Rows of a "SELECT idx, params, result, cache_origin FROM results ..." query.
std::vector<stored_result> read_results(statement& q) {
  std::vector<stored_result> out;
  while (q.step()) {
    stored_result r{std::uint64_t(q.int64(0)), std::string(q.text(1)), std::string(q.text(2))};
    if (!q.is_null(3)) r.result_json = detail::with_cache_hit(r.result_json, q.int64(3));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

sqlite_job_store::sqlite_job_store(const std::string& path)
    : m_path(path),
      m_shared_reads(path == ":memory:" || path.empty()),
      m_db(path, sqlite_migrations()) {
  reap_deleted();  // jobs deleted while a daemon stopped before their result rows were all gone
}

sqlite_job_store::~sqlite_job_store() = default;

sqlite_job_store::reader::reader(sqlite_job_store& store) : m_store(store) {
  if (store.m_shared_reads) {
    m_writer_lock = std::unique_lock(store.m_mutex);
    m_db = &store.m_db;
    return;
  }
  {
    std::lock_guard lock(store.m_pool_mutex);
    if (!store.m_idle_readers.empty()) {
      m_own = std::move(store.m_idle_readers.back());
      store.m_idle_readers.pop_back();
    }
  }
  if (!m_own) m_own = std::make_unique<database>(store.m_path, sqlite_migrations());
  m_db = m_own.get();
}

sqlite_job_store::reader::~reader() {
  if (!m_own) return;
  std::lock_guard lock(m_store.m_pool_mutex);
  m_store.m_idle_readers.push_back(std::move(m_own));
}

job_record sqlite_job_store::read_row(statement& s) {
  job_record r;
  r.id = s.int64(0);
  r.name = std::string(s.text(1));
  r.status = parse_job_status(s.text(2)).value_or(job_status::failed);
  r.priority = int(s.int64(3));
  r.engine = parse_engine(s.text(4));
  r.requested_device = detail::opt_int(s.opt_int64(5));
  r.device = detail::opt_int(s.opt_int64(6));
  r.op = std::string(s.text(7));
  r.progress.total = std::uint64_t(s.int64(8));
  r.progress.done = std::uint64_t(s.int64(9));
  r.progress.ok = std::uint64_t(s.int64(10));
  r.progress.failed = std::uint64_t(s.int64(11));
  if (!s.is_null(12)) {
    r.best = job_best{std::uint64_t(s.int64(12)), s.real(13), std::string(s.text(20))};
  }
  r.created_ms = s.int64(14);
  r.started_ms = s.opt_int64(15);
  r.finished_ms = s.opt_int64(16);
  if (!s.is_null(17)) r.error = point_error{std::string(s.text(17)), std::string(s.text(18))};
  r.cancel_requested = s.int64(19) != 0;
  r.labels = decode_labels(s.text(21));
  if (!s.is_null(22)) r.fitness_json = std::string(s.text(22));
  r.cached_from = s.opt_int64(23);
  if (!s.is_null(24)) r.node = std::string(s.text(24));
  r.requested_node = s.opt_text(25);
  r.requested_model = s.opt_text(26);
  if (!s.is_null(27)) r.variants_json = std::string(s.text(27));
  r.task = s.opt_text(28);
  return r;
}

// An accepted job must survive a power loss, not only a crash: while one of these lives, commits
// are synced to disk (synchronous=FULL). Points stay at NORMAL: a lost one is measured again.
class sqlite_job_store::durable_commits {
 public:
  explicit durable_commits(database& db) : m_db(db) { m_db.exec("PRAGMA synchronous=FULL"); }
  durable_commits(const durable_commits&) = delete;
  durable_commits& operator=(const durable_commits&) = delete;
  ~durable_commits() {
    try {
      m_db.exec("PRAGMA synchronous=NORMAL");
    } catch (const storage_error&) {
    }
  }

 private:
  database& m_db;
};

std::optional<submit_outcome> sqlite_job_store::find_key(const job_submission& job) {
  if (!job.idempotency_key) return std::nullopt;
  auto s = m_db.prepare("SELECT id, request_hash FROM jobs WHERE idempotency_key = ?");
  s->bind(1, *job.idempotency_key);
  if (!s->step()) return std::nullopt;
  return submit_outcome::known(s->int64(0), s->text(1) != job.request_hash);
}

std::int64_t sqlite_job_store::insert_job(const job_submission& job, job_status status,
                                          std::int64_t now_ms,
                                          std::optional<std::int64_t> finished_ms) {
  {
    auto s = m_db.prepare(
        "INSERT INTO jobs (name, status, priority, engine, requested_device, op, total_points, "
        "created_ms, started_ms, finished_ms, idempotency_key, request_hash, labels, "
        "place_node, place_model, task, needs, agent) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    s->bind(1, job.name)
        .bind(2, to_string(status))
        .bind(3, job.priority)
        .bind(4, to_string(job.engine))
        .bind(5, job.requested_device)
        .bind(6, job.op)
        .bind(7, std::int64_t(job.total_points))
        .bind(8, now_ms)
        .bind(9, finished_ms)  // a job stored finished started when it finished, here
        .bind(10, finished_ms)
        .bind(11, job.idempotency_key)
        .bind(12, job.request_hash)
        .bind(13, encode_labels(job.labels))
        .bind(14, job.requested_node)
        .bind(15, job.requested_model)
        .bind(16, job.task)
        .bind(17, std::int64_t(job.needs))
        .bind(18, job.agent);
    s->run();
  }
  const std::int64_t id = m_db.last_insert_rowid();
  {
    auto s = m_db.prepare("INSERT INTO job_specs (job_id, spec) VALUES (?, ?)");
    s->bind(1, id).bind(2, job.spec_json);
    s->run();
  }
  for (const auto& [key, value] : job.labels) {
    auto s = m_db.prepare("INSERT INTO job_labels (job_id, key, value) VALUES (?, ?, ?)");
    s->bind(1, id).bind(2, key).bind(3, value);
    s->run();
  }
  return id;
}

submit_outcome sqlite_job_store::submit(const job_submission& job, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  durable_commits durable(m_db);
  database::transaction tx(m_db);
  if (auto known = find_key(job)) return *known;
  if (job.task) {
    auto s = m_db.prepare("SELECT retired_ms FROM tasks WHERE name = ?");
    s->bind(1, *job.task);
    if (s->step() && s->opt_int64(0)) return submit_outcome::retired();
  }
  if (job.task && job.agent && job.agent_bound) {
    const agent_count counted = count_agent(m_db, *job.task, *job.agent, job.agent_bound->since_ms);
    if (counted.jobs >= job.agent_bound->limit) return submit_outcome::bounded(counted);
  }
  const std::int64_t id = insert_job(job, job_status::queued, now_ms, std::nullopt);
  tx.commit();
  return submit_outcome::stored(id);
}

submit_outcome sqlite_job_store::import_job(const job_submission& job,
                                            std::span<const result_row> rows, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  durable_commits durable(m_db);
  database::transaction tx(m_db);
  if (auto known = find_key(job)) return *known;
  const std::int64_t id = insert_job(job, job_status::succeeded, now_ms, now_ms);
  for (const auto& row : rows)
    store_row(row, id, now_ms);
  tx.commit();
  return submit_outcome::stored(id);
}

bool sqlite_job_store::exists(std::int64_t id) {
  reader db(*this);
  auto s = db->prepare("SELECT 1 FROM jobs WHERE id = ?");
  s->bind(1, id);
  return s->step();
}

std::optional<job_record> sqlite_job_store::get(std::int64_t id) {
  reader db(*this);
  auto s = db->prepare("SELECT " + detail::k_columns +
                       ", (SELECT spec FROM job_specs WHERE job_id = id) FROM jobs WHERE id = ?");
  s->bind(1, id);
  if (!s->step()) return std::nullopt;
  job_record r = read_row(*s);
  r.spec_json = std::string(s->text(detail::k_column_count));
  return r;
}

std::vector<job_record> sqlite_job_store::list(const list_filter& filter) {
  std::string sql = "SELECT " + detail::k_columns + " FROM jobs WHERE 1";
  if (!filter.statuses.empty()) {
    sql += " AND status IN (";
    for (std::size_t i = 0; i < filter.statuses.size(); ++i)
      sql += i ? ",?" : "?";
    sql += ")";
  }
  if (filter.before_id) sql += " AND id < ?";
  if (filter.task) sql += " AND task = ?";
  for (std::size_t i = 0; i < filter.labels.size(); ++i) {
    sql += " AND id IN (SELECT job_id FROM job_labels WHERE key = ? AND value = ?)";
  }
  sql += " ORDER BY id DESC LIMIT ?";

  reader db(*this);
  std::vector<job_record> out;
  {
    auto s = db->prepare(sql);
    int i = 1;
    for (auto st : filter.statuses)
      s->bind(i++, to_string(st));
    if (filter.before_id) s->bind(i++, *filter.before_id);
    if (filter.task) s->bind(i++, *filter.task);
    for (const auto& [k, v] : filter.labels) {
      s->bind(i++, k);
      s->bind(i++, v);
    }
    s->bind(i, std::int64_t(filter.limit));
    while (s->step())
      out.push_back(read_row(*s));
  }
  return out;
}

std::optional<std::string> sqlite_job_store::spec_json(std::int64_t id) {
  reader db(*this);
  auto s = db->prepare("SELECT spec FROM job_specs WHERE job_id = ?");
  s->bind(1, id);
  if (!s->step()) return std::nullopt;
  return std::string(s->text(0));
}

namespace {

// Rows of a "SELECT name, description, template, created_ms, retired_ms FROM tasks" query.
task_record read_task(statement& s) {
  return {std::string(s.text(0)), std::string(s.text(1)), std::string(s.text(2)), s.int64(3),
          s.opt_int64(4)};
}

}  // namespace

bool sqlite_job_store::create_task(const task_record& task) {
  std::lock_guard lock(m_mutex);
  durable_commits durable(m_db);
  auto s = m_db.prepare(
      "INSERT INTO tasks (name, description, template, created_ms, retired_ms) VALUES (?, ?, ?, "
      "?, ?) ON CONFLICT (name) DO NOTHING RETURNING name");
  s->bind(1, task.name)
      .bind(2, task.description)
      .bind(3, task.template_json)
      .bind(4, task.created_ms)
      .bind(5, task.retired_ms);
  return s->step();
}

std::optional<task_record> sqlite_job_store::task(const std::string& name) {
  reader db(*this);
  auto s = db->prepare(
      "SELECT name, description, template, created_ms, retired_ms FROM tasks WHERE name = ?");
  s->bind(1, name);
  if (!s->step()) return std::nullopt;
  return read_task(*s);
}

std::vector<task_record> sqlite_job_store::tasks() {
  reader db(*this);
  auto s = db->prepare(
      "SELECT name, description, template, created_ms, retired_ms FROM tasks ORDER BY name");
  std::vector<task_record> out;
  while (s->step())
    out.push_back(read_task(*s));
  return out;
}

agent_count sqlite_job_store::count_agent(database& db, const std::string& task,
                                          const std::string& agent, std::int64_t since_ms) {
  auto s = db.prepare(
      "SELECT COUNT(*), MIN(created_ms) FROM ("
      "SELECT created_ms FROM jobs WHERE task = ?1 AND agent = ?2 AND created_ms >= ?3 "
      "UNION ALL SELECT created_ms FROM deleted_submissions "
      "WHERE task = ?1 AND agent = ?2 AND created_ms >= ?3)");
  s->bind(1, task).bind(2, agent).bind(3, since_ms);
  agent_count out;
  if (s->step()) {
    out.jobs = s->int64(0);
    out.oldest_ms = s->opt_int64(1);
  }
  return out;
}

agent_count sqlite_job_store::agent_submissions(const std::string& task, const std::string& agent,
                                                std::int64_t since_ms) {
  reader db(*this);
  return count_agent(*db, task, agent, since_ms);
}

retire_outcome sqlite_job_store::retire_task(const std::string& name, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  std::optional<std::int64_t> retired;
  {
    auto s = m_db.prepare("SELECT retired_ms FROM tasks WHERE name = ?");
    s->bind(1, name);
    if (!s->step()) return retire_outcome::not_found;
    retired = s->opt_int64(0);
  }
  if (retired) return retire_outcome::already_retired;
  auto s = m_db.prepare("UPDATE tasks SET retired_ms = ? WHERE name = ?");
  s->bind(1, now_ms).bind(2, name);
  s->run();
  tx.commit();
  return retire_outcome::retired;
}

std::optional<std::pair<std::int64_t, std::string>> sqlite_job_store::find_by_idempotency_key(
    const std::string& key) {
  reader db(*this);
  auto s = db->prepare("SELECT id, request_hash FROM jobs WHERE idempotency_key = ?");
  s->bind(1, key);
  if (!s->step()) return std::nullopt;
  return std::pair{s->int64(0), std::string(s->text(1))};
}

std::optional<claimed_job> sqlite_job_store::claim(const claim_request& request) {
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  claimed_job out;
  {
    auto s = m_db.prepare(
        "UPDATE jobs SET status = 'running', node = ?1, device = ?2, "
        "started_ms = coalesce(started_ms, ?3), attempt = attempt + 1, "
        "lease_expires_ms = ?3 + ?4 "
        "WHERE id = (SELECT id FROM jobs WHERE status = 'queued' AND "
        "(engine = 'auto' OR engine = ?5) AND (requested_device IS NULL OR "
        "requested_device = ?2) AND (place_node IS NULL OR place_node = ?1) AND "
        "(place_model IS NULL OR place_model = ?6) AND (needs & ?7) = 0 "
        "ORDER BY priority DESC, id LIMIT 1) "
        "RETURNING id, attempt, cancel_requested");
    s->bind(1, request.node)
        .bind(2, request.device)
        .bind(3, request.now_ms)
        .bind(4, request.lease_ms)
        .bind(5, request.engine)
        .bind(6, request.model)
        .bind(7, std::int64_t(request.lacks));
    if (!s->step()) return std::nullopt;
    out.lease = {s->int64(0), s->int64(1)};
    out.cancel_requested = s->int64(2) != 0;
    s->run();
  }
  {
    auto s = m_db.prepare("SELECT spec FROM job_specs WHERE job_id = ?");
    s->bind(1, out.lease.job_id);
    if (s->step()) out.spec_json = std::string(s->text(0));
  }
  tx.commit();
  return out;
}

lease_renewal sqlite_job_store::renew_leases(const std::string& node,
                                             std::span<const job_lease> held, std::int64_t lease_ms,
                                             std::int64_t now_ms) {
  lease_renewal out;
  if (held.empty()) return out;
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  for (const auto& l : held) {
    auto s = m_db.prepare(
        "UPDATE jobs SET lease_expires_ms = ? WHERE id = ? AND node = ? AND attempt = ? AND "
        "status = 'running' RETURNING cancel_requested");
    s->bind(1, now_ms + lease_ms).bind(2, l.job_id).bind(3, node).bind(4, l.attempt);
    if (!s->step()) {
      out.lost.push_back(l.job_id);
      continue;
    }
    if (s->int64(0) != 0) out.cancel_requested.push_back(l.job_id);
    s->run();
  }
  tx.commit();
  return out;
}

// A running job put back: queued again, or cancelled when a cancel was asked for meanwhile.
static const std::string k_release =
    "status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END, "
    "finished_ms = CASE WHEN cancel_requested THEN ?1 ELSE finished_ms END, "
    "error_type = CASE WHEN cancel_requested THEN 'cancelled' ELSE error_type END, "
    "error_message = CASE WHEN cancel_requested THEN ?2 ELSE error_message END, "
    "lease_expires_ms = NULL";

std::vector<std::int64_t> sqlite_job_store::expire_leases(std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare("UPDATE jobs SET " + k_release +
                        " WHERE status = 'running' AND lease_expires_ms < ?1 RETURNING id");
  s->bind(1, now_ms).bind(2, std::string_view("cancelled while its node was unreachable"));
  std::vector<std::int64_t> out;
  while (s->step())
    out.push_back(s->int64(0));
  return out;
}

std::vector<std::int64_t> sqlite_job_store::recover_node(const std::string& node,
                                                         std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  // A job from before nodes were recorded has none: it was this daemon's.
  auto s = m_db.prepare("UPDATE jobs SET " + k_release +
                        " WHERE status = 'running' AND (node = ?3 OR node IS NULL) RETURNING id");
  s->bind(1, now_ms).bind(2, std::string_view("cancelled while the daemon was down")).bind(3, node);
  std::vector<std::int64_t> out;
  while (s->step())
    out.push_back(s->int64(0));
  return out;
}

bool sqlite_job_store::requeue(const std::string& node, const job_lease& lease) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare(
      "UPDATE jobs SET status = 'queued', lease_expires_ms = NULL WHERE id = ? AND node = ? AND "
      "attempt = ? AND status = 'running'");
  s->bind(1, lease.job_id).bind(2, node).bind(3, lease.attempt);
  s->run();
  return m_db.changes() == 1;
}

bool sqlite_job_store::finish(const std::string& node, const job_lease& lease, job_status status,
                              const std::optional<point_error>& error, std::int64_t now_ms,
                              const std::optional<std::string>& fitness_json,
                              const std::optional<std::string>& variants_json) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare(
      "UPDATE jobs SET status = ?1, finished_ms = ?2, error_type = ?3, error_message = ?4, "
      "fitness = ?5, lease_expires_ms = NULL, variants_summary = ?9 WHERE id = ?6 AND node = ?7 "
      "AND attempt = ?8 AND status = 'running'");
  s->bind(1, to_string(status)).bind(2, now_ms);
  if (error) {
    s->bind(3, error->type).bind(4, error->message);
  }
  s->bind(5, fitness_json).bind(6, lease.job_id).bind(7, node).bind(8, lease.attempt);
  s->bind(9, variants_json);
  s->run();
  return m_db.changes() == 1;
}

bool sqlite_job_store::set_fitness(std::int64_t job_id, const std::string& fitness_json) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare(
      "UPDATE jobs SET fitness = ?1 WHERE id = ?2 AND status IN ('succeeded', 'failed', "
      "'cancelled')");
  s->bind(1, fitness_json).bind(2, job_id);
  s->run();
  return m_db.changes() == 1;
}

std::vector<scored_point> sqlite_job_store::scored_points(std::int64_t job_id) {
  reader db(*this);
  auto q = db->prepare(
      "SELECT status = 'ok', correct, combined_score, speedup, latency_score, "
      "json_extract(result, '$.simulated'), idx, flags FROM results WHERE job_id = ? ORDER BY idx");
  q->bind(1, job_id);
  std::vector<scored_point> out;
  while (q->step()) {
    scored_point p;
    p.ok = q->int64(0) != 0;
    p.correct = q->int64(1) != 0;
    p.combined_score = q->real(2);
    p.speedup = q->opt_real(3);
    p.latency_score = q->opt_real(4);
    p.simulated = !q->is_null(5) && q->int64(5) != 0;
    p.index = std::uint64_t(q->int64(6));
    p.flags = detail::split_flags(q->text(7));
    out.push_back(p);
  }
  return out;
}

void sqlite_job_store::set_cache_key(std::int64_t id, const std::string& key) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare("UPDATE jobs SET cache_key = ? WHERE id = ?");
  s->bind(1, key).bind(2, id);
  s->run();
}

std::optional<std::int64_t> sqlite_job_store::find_cached(const std::string& key,
                                                          std::int64_t except_id) {
  reader db(*this);
  auto q = db->prepare(
      "SELECT id FROM jobs WHERE cache_key = ? AND id <> ? AND status = 'succeeded' AND "
      "done_points = total_points ORDER BY id DESC LIMIT 1");
  q->bind(1, key).bind(2, except_id);
  if (!q->step()) return std::nullopt;
  return q->int64(0);
}

std::optional<std::int64_t> sqlite_job_store::copy_cached_results(std::int64_t from,
                                                                  std::int64_t to,
                                                                  std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  std::int64_t origin = from;  // a cached job's own results came from an earlier one
  {
    auto s = m_db.prepare("SELECT COALESCE(cached_from, id) FROM jobs WHERE id = ?");
    s->bind(1, from);
    if (!s->step()) return std::nullopt;  // deleted since it was found
    origin = s->int64(0);
  }
  {
    auto s = m_db.prepare(
        "INSERT INTO results (job_id, idx, status, median_us, params, result, created_ms, "
        "correct, combined_score, speedup, latency_score, flags, cache_origin, variant) "
        "SELECT ?1, idx, status, median_us, params, result, ?3, correct, combined_score, "
        "speedup, latency_score, flags, ?2, variant FROM results WHERE job_id = ?4 "
        "ON CONFLICT DO NOTHING");
    s->bind(1, to).bind(2, origin).bind(3, now_ms).bind(4, from);
    s->run();
  }
  {
    auto s = m_db.prepare(
        "UPDATE jobs SET (done_points, ok_points, failed_points, best_index, best_median_us, "
        "best_params, best_cost) = (SELECT done_points, ok_points, failed_points, best_index, "
        "best_median_us, best_params, best_cost FROM jobs WHERE id = ?1), cached_from = ?2 "
        "WHERE id = ?3");
    s->bind(1, from).bind(2, origin).bind(3, to);
    s->run();
  }
  tx.commit();
  return origin;
}

std::optional<std::string> sqlite_job_store::roofline(const std::string& device_key) {
  reader db(*this);
  auto q = db->prepare("SELECT roofline FROM device_rooflines WHERE device_key = ?");
  q->bind(1, device_key);
  if (!q->step()) return std::nullopt;
  return std::string(q->text(0));
}

void sqlite_job_store::put_roofline(const std::string& device_key, const std::string& roofline_json,
                                    std::int64_t measured_ms) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare(
      "INSERT INTO device_rooflines (device_key, roofline, measured_ms) VALUES (?, ?, ?) "
      "ON CONFLICT (device_key) DO UPDATE SET roofline = excluded.roofline, "
      "measured_ms = excluded.measured_ms");
  s->bind(1, device_key).bind(2, roofline_json).bind(3, measured_ms);
  s->run();
}

cancel_outcome sqlite_job_store::cancel(std::int64_t id, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  std::string status;
  {
    auto s = m_db.prepare("SELECT status FROM jobs WHERE id = ?");
    s->bind(1, id);
    if (!s->step()) return cancel_outcome::not_found;
    status = std::string(s->text(0));
  }
  cancel_outcome out;
  if (status == "queued") {
    auto s = m_db.prepare(
        "UPDATE jobs SET status = 'cancelled', cancel_requested = 1, finished_ms = ?, "
        "error_type = 'cancelled', error_message = 'cancelled before it started' WHERE id = ?");
    s->bind(1, now_ms).bind(2, id);
    s->run();
    out = cancel_outcome::cancelled;
  } else if (status == "running") {
    auto s = m_db.prepare("UPDATE jobs SET cancel_requested = 1 WHERE id = ?");
    s->bind(1, id);
    s->run();
    out = cancel_outcome::requested;
  } else {
    return cancel_outcome::already_finished;
  }
  tx.commit();
  return out;
}

delete_outcome sqlite_job_store::delete_job(std::int64_t id) {
  {
    std::lock_guard lock(m_mutex);
    // The job's row goes in one short transaction; its result rows after it, a few at a time
    // (reap), so that a job of 100,000 points (hundreds of MB) never holds the store's one
    // writer for seconds. So the rows must not go with the job by the foreign key's cascade,
    // which is switched off for that transaction (it can only be outside one).
    m_db.exec("PRAGMA foreign_keys=OFF");
    struct restore {
      database& db;
      ~restore() {
        try {
          db.exec("PRAGMA foreign_keys=ON");
        } catch (const std::exception& e) {
          spdlog::error("storage: foreign keys could not be switched on again: {}", e.what());
        }
      }
    } keys_back_on{m_db};
    database::transaction tx(m_db);
    {
      auto s = m_db.prepare("SELECT status, task, agent, created_ms FROM jobs WHERE id = ?");
      s->bind(1, id);
      if (!s->step()) return delete_outcome::not_found;
      const auto status = parse_job_status(std::string(s->text(0)));
      if (!status || !is_terminal(*status)) return delete_outcome::not_finished;
      const auto task = s->opt_text(1);
      const auto agent = s->opt_text(2);
      if (task && agent) {
        auto keep = m_db.prepare(
            "INSERT INTO deleted_submissions (task, agent, created_ms) VALUES (?, ?, ?)");
        keep->bind(1, *task).bind(2, *agent).bind(3, s->int64(3));
        keep->run();
      }
    }
    for (const char* sql :
         {"DELETE FROM job_specs WHERE job_id = ?", "DELETE FROM job_labels WHERE job_id = ?",
          "INSERT INTO deleted_jobs (job_id) VALUES (?)", "DELETE FROM jobs WHERE id = ?"}) {
      auto s = m_db.prepare(sql);
      s->bind(1, id);
      s->run();
    }
    tx.commit();
  }
  try {
    reap_deleted();  // this job's rows, and any an earlier deletion left
  } catch (const storage_error& e) {
    // The job is gone; its rows go when a later deletion or the next start reaps them.
    spdlog::warn("storage: the result rows of deleted job {} were not all deleted: {}", id,
                 e.what());
  }
  ++m_deleted;
  return delete_outcome::deleted;
}

void sqlite_job_store::reap_deleted() {
  std::vector<std::int64_t> pending;
  {
    std::lock_guard lock(m_mutex);
    auto s = m_db.prepare("SELECT job_id FROM deleted_jobs ORDER BY job_id");
    while (s->step())
      pending.push_back(s->int64(0));
  }
  for (const std::int64_t id : pending)
    reap(id);
}

void sqlite_job_store::reap(std::int64_t id) {
  for (bool first = true;; first = false) {
    // A mutex is not fair: without a pause the next chunk would take it again before a writer
    // waiting for it (a submission, a batch of points) woke.
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(m_mutex);
    database::transaction tx(m_db);
    auto s = m_db.prepare(
        "DELETE FROM results WHERE job_id = ?1 AND idx IN "
        "(SELECT idx FROM results WHERE job_id = ?1 ORDER BY idx LIMIT ?2)");
    s->bind(1, id).bind(2, std::int64_t(k_reap_rows));
    s->run();
    const bool done = m_db.changes() < int(k_reap_rows);
    if (done) {
      auto d = m_db.prepare("DELETE FROM deleted_jobs WHERE job_id = ?");
      d->bind(1, id);
      d->run();
    }
    tx.commit();
    if (done) break;
  }
  // The pages the rows held go back to the file system, a few hundred at a time (a step moves
  // pages from the file's end into the holes: milliseconds).
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(m_mutex);
    if (m_db.give_back_free_pages(k_vacuum_pages) < k_vacuum_pages) return;
  }
}

std::vector<std::int64_t> sqlite_job_store::ended_before(std::int64_t before_ms,
                                                         std::size_t limit) {
  reader db(*this);
  auto s = db->prepare(
      "SELECT id FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled') AND "
      "finished_ms < ? ORDER BY finished_ms, id LIMIT ?");
  s->bind(1, before_ms).bind(2, std::int64_t(limit));
  std::vector<std::int64_t> out;
  while (s->step())
    out.push_back(s->int64(0));
  return out;
}

void sqlite_job_store::add_results(std::span<const result_row> rows, std::int64_t now_ms) {
  if (rows.empty()) return;
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  for (const auto& row : rows)
    store_row(row, row.job_id, now_ms);
  tx.commit();
}

void sqlite_job_store::store_row(const result_row& row, std::int64_t job_id, std::int64_t now_ms) {
  {
    auto s = m_db.prepare(
        "INSERT INTO results (job_id, idx, status, median_us, params, result, created_ms, "
        "correct, combined_score, speedup, latency_score, flags, variant) "
        "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 "
        "WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1) ON CONFLICT DO NOTHING");
    s->bind(1, job_id)
        .bind(2, std::int64_t(row.index))
        .bind(3, std::string_view(row.ok ? "ok" : "failed"))
        .bind(4, row.median_us)
        .bind(5, row.params_json)
        .bind(6, row.result_json)
        .bind(7, now_ms)
        .bind(8, row.score.correct ? 1 : 0)
        .bind(9, row.score.combined_score)
        .bind(10, row.score.speedup)
        .bind(11, row.score.latency_score)
        .bind(12, detail::join_flags(row.flags))
        .bind(13, row.variant);
    s->run();
  }
  if (m_db.changes() == 0) return;  // already stored
  // SET expressions see the row's old values, so best_* compare against the previous best.
  const auto cost = best_cost(row);
  auto s = m_db.prepare(
      "UPDATE jobs SET done_points = done_points + 1, ok_points = ok_points + ?1, "
      "failed_points = failed_points + ?2, "
      "best_index = CASE WHEN ?7 IS NOT NULL AND (best_cost IS NULL OR ?7 < best_cost) "
      "THEN ?4 ELSE best_index END, "
      "best_params = CASE WHEN ?7 IS NOT NULL AND (best_cost IS NULL OR ?7 < best_cost) "
      "THEN ?6 ELSE best_params END, "
      "best_median_us = CASE WHEN ?7 IS NOT NULL AND (best_cost IS NULL OR ?7 < best_cost) "
      "THEN ?3 ELSE best_median_us END, "
      "best_cost = CASE WHEN ?7 IS NOT NULL AND (best_cost IS NULL OR ?7 < best_cost) "
      "THEN ?7 ELSE best_cost END "
      "WHERE id = ?5");
  s->bind(1, row.ok ? 1 : 0)
      .bind(2, row.ok ? 0 : 1)
      .bind(3, cost ? row.median_us : std::nullopt)
      .bind(4, std::int64_t(row.point.value_or(row.index)))
      .bind(5, job_id)
      .bind(6, row.params_json)
      .bind(7, cost);
  s->run();
}

std::vector<std::uint64_t> sqlite_job_store::result_indices(std::int64_t job_id) {
  reader db(*this);
  std::vector<std::uint64_t> out;
  auto s = db->prepare("SELECT idx FROM results WHERE job_id = ? ORDER BY idx");
  s->bind(1, job_id);
  while (s->step())
    out.push_back(std::uint64_t(s->int64(0)));
  return out;
}

std::vector<stored_result> sqlite_job_store::results(std::int64_t job_id, std::uint64_t offset,
                                                     std::uint64_t limit) {
  reader db(*this);
  // OFFSET counts rows, not indices: a job still running may have gaps in idx.
  auto q = db->prepare(
      "SELECT idx, params, result, cache_origin FROM results WHERE job_id = ? ORDER BY idx "
      "LIMIT ? OFFSET ?");
  q->bind(1, job_id)
      .bind(2, std::int64_t(std::min<std::uint64_t>(limit, INT64_MAX)))
      .bind(3, std::int64_t(offset));
  return read_results(*q);
}

std::vector<stored_result> sqlite_job_store::results_after(std::int64_t job_id,
                                                           std::uint64_t after_index,
                                                           std::uint64_t limit) {
  reader db(*this);
  auto q = db->prepare(
      "SELECT idx, params, result, cache_origin FROM results WHERE job_id = ? AND idx > ? "
      "ORDER BY idx LIMIT ?");
  q->bind(1, job_id)
      .bind(2, std::int64_t(after_index))
      .bind(3, std::int64_t(std::min<std::uint64_t>(limit, INT64_MAX)));
  return read_results(*q);
}

void sqlite_job_store::ping() {
  reader db(*this);
  auto s = db->prepare("SELECT id FROM jobs ORDER BY id DESC LIMIT 1");
  (void)s->step();
}

void sqlite_job_store::join(const node_record& node, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare(
      "INSERT INTO nodes (name, instance, version, started_ms, heartbeat_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET instance = ?2, "
      "version = ?3, started_ms = ?4, heartbeat_ms = ?5, stopped_ms = NULL");
  s->bind(1, node.name)
      .bind(2, node.instance)
      .bind(3, node.version)
      .bind(4, node.started_ms)
      .bind(5, now_ms);
  s->run();
}

void sqlite_job_store::heartbeat(const std::string& node, std::span<const device_record> devices,
                                 std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  database::transaction tx(m_db);
  {
    auto s = m_db.prepare("UPDATE nodes SET heartbeat_ms = ? WHERE name = ?");
    s->bind(1, now_ms).bind(2, node);
    s->run();
  }
  {
    auto s = m_db.prepare("DELETE FROM devices WHERE node = ?");
    s->bind(1, node);
    s->run();
  }
  for (const auto& d : devices) {
    auto s = m_db.prepare(
        "INSERT INTO devices (node, idx, engine, model, state, current_job, info) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    s->bind(1, node)
        .bind(2, d.index)
        .bind(3, d.engine)
        .bind(4, d.model)
        .bind(5, d.state)
        .bind(6, d.current_job)
        .bind(7, d.info_json);
    s->run();
  }
  tx.commit();
}

void sqlite_job_store::leave(const std::string& node, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto s = m_db.prepare("UPDATE nodes SET stopped_ms = ? WHERE name = ?");
  s->bind(1, now_ms).bind(2, node);
  s->run();
}

std::vector<node_record> sqlite_job_store::nodes(std::int64_t now_ms) {
  reader db(*this);
  auto s = db->prepare(
      "SELECT name, instance, version, started_ms, ? - heartbeat_ms, stopped_ms IS NOT NULL "
      "FROM nodes ORDER BY name");
  s->bind(1, now_ms);
  std::vector<node_record> out;
  while (s->step()) {
    out.push_back({std::string(s->text(0)), std::string(s->text(1)), std::string(s->text(2)),
                   s->int64(3), s->int64(4), s->int64(5) != 0});
  }
  return out;
}

std::vector<device_record> sqlite_job_store::devices(std::int64_t now_ms) {
  reader db(*this);
  auto s = db->prepare(
      "SELECT d.node, d.idx, d.engine, d.model, d.state, d.current_job, d.info, "
      "? - n.heartbeat_ms, n.stopped_ms IS NOT NULL FROM devices d JOIN nodes n "
      "ON n.name = d.node ORDER BY d.node, d.idx");
  s->bind(1, now_ms);
  std::vector<device_record> out;
  while (s->step()) {
    device_record d;
    d.node = std::string(s->text(0));
    d.index = int(s->int64(1));
    d.engine = std::string(s->text(2));
    d.model = std::string(s->text(3));
    d.state = std::string(s->text(4));
    d.current_job = s->opt_int64(5);
    d.info_json = std::string(s->text(6));
    d.heartbeat_age_ms = s->int64(7);
    d.node_stopped = s->int64(8) != 0;
    out.push_back(std::move(d));
  }
  return out;
}

std::map<job_status, std::int64_t> sqlite_job_store::count_by_status() {
  reader db(*this);
  std::map<job_status, std::int64_t> out;
  auto s = db->prepare("SELECT status, count(*) FROM jobs GROUP BY status");
  while (s->step()) {
    if (auto st = parse_job_status(s->text(0))) out[*st] = s->int64(1);
  }
  return out;
}

std::vector<store_metric> sqlite_job_store::metrics() {
  return {{"kernelscan_sqlite_memory_bytes", "Memory SQLite holds: page caches, statements.",
           "gauge", double(sqlite_memory_used())},
          detail::deleted_jobs_metric(m_deleted.load())};
}

}  // namespace kernelscan
