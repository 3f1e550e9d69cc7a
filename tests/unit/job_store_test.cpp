#include "storage/job_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "storage/database.hpp"
#include "storage/migrations.hpp"

namespace kernelscan {
namespace {

job_submission submission(std::string name, std::map<std::string, std::string> labels = {},
                          std::uint64_t total = 4) {
  job_submission s;
  s.name = std::move(name);
  s.labels = std::move(labels);
  s.priority = 3;
  s.engine = engine_kind::mock;
  s.requested_device = 1;
  s.op = "gemm";
  s.total_points = total;
  s.spec_json = R"({"kernel":{"op":"gemm"}})";
  s.request_hash = "hash-" + s.name;
  return s;
}

result_row row(std::int64_t job, std::uint64_t index, bool ok, std::optional<double> median) {
  result_row r;
  r.job_id = job;
  r.index = index;
  r.ok = ok;
  r.median_us = median;
  r.params_json = R"({"M":)" + std::to_string(index * 100) + "}";
  r.result_json = R"({"index":)" + std::to_string(index) + "}";
  return r;
}

std::vector<std::int64_t> ids(const std::vector<job_record>& jobs) {
  std::vector<std::int64_t> out;
  for (const auto& j : jobs)
    out.push_back(j.id);
  return out;
}

TEST(JobStore, SubmitReturnsIncreasingIdsAndGetReturnsEverything) {
  job_store store(":memory:");
  const auto a = store.submit(submission("first", {{"team", "perf"}, {"run", "7"}}), 1000);
  const auto b = store.submit(submission("second"), 2000);
  EXPECT_TRUE(a.created);
  EXPECT_FALSE(a.conflict);
  EXPECT_TRUE(b.created);
  EXPECT_GT(a.id, 0);
  EXPECT_GT(b.id, a.id);

  const auto job = store.get(a.id);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, a.id);
  EXPECT_EQ(job->name, "first");
  EXPECT_EQ(job->labels, (std::map<std::string, std::string>{{"team", "perf"}, {"run", "7"}}));
  EXPECT_EQ(job->status, job_status::queued);
  EXPECT_EQ(job->priority, 3);
  EXPECT_EQ(job->engine, engine_kind::mock);
  EXPECT_EQ(job->requested_device, 1);
  EXPECT_FALSE(job->device.has_value());
  EXPECT_EQ(job->op, "gemm");
  EXPECT_EQ(job->progress.total, 4u);
  EXPECT_EQ(job->progress.done, 0u);
  EXPECT_EQ(job->created_ms, 1000);
  EXPECT_FALSE(job->started_ms.has_value());
  EXPECT_FALSE(job->finished_ms.has_value());
  EXPECT_FALSE(job->error.has_value());
  EXPECT_FALSE(job->cancel_requested);
  EXPECT_EQ(job->spec_json, R"({"kernel":{"op":"gemm"}})");
  EXPECT_FALSE(job->best.has_value());
  EXPECT_EQ(store.spec_json(a.id), R"({"kernel":{"op":"gemm"}})");

  EXPECT_TRUE(store.get(b.id)->labels.empty());
  EXPECT_FALSE(store.get(b.id + 100).has_value());
  EXPECT_FALSE(store.spec_json(b.id + 100).has_value());

  auto any_device = submission("anywhere");
  any_device.requested_device.reset();
  any_device.engine = engine_kind::any;
  const auto c = store.submit(any_device, 3000);
  EXPECT_FALSE(store.get(c.id)->requested_device.has_value());
  EXPECT_EQ(store.get(c.id)->engine, engine_kind::any);
}

TEST(JobStore, IdempotencyKey) {
  job_store store(":memory:");
  auto s = submission("job");
  s.idempotency_key = "key-1";
  const auto first = store.submit(s, 1000);
  EXPECT_TRUE(first.created);

  const auto retry = store.submit(s, 2000);
  EXPECT_FALSE(retry.created);
  EXPECT_FALSE(retry.conflict);
  EXPECT_EQ(retry.id, first.id);

  auto other = s;
  other.request_hash = "different";
  const auto conflict = store.submit(other, 3000);
  EXPECT_FALSE(conflict.created);
  EXPECT_TRUE(conflict.conflict);
  EXPECT_EQ(conflict.id, first.id);

  // Neither retry created a job; another key does.
  EXPECT_EQ(store.count_by_status()[job_status::queued], 1);
  s.idempotency_key = "key-2";
  const auto second = store.submit(s, 4000);
  EXPECT_TRUE(second.created);
  EXPECT_NE(second.id, first.id);
  // Jobs without a key never collide.
  s.idempotency_key.reset();
  EXPECT_TRUE(store.submit(s, 5000).created);
  EXPECT_TRUE(store.submit(s, 5000).created);
  EXPECT_EQ(store.count_by_status()[job_status::queued], 4);
}

TEST(JobStore, ListNewestFirstWithFilters) {
  job_store store(":memory:");
  const auto j1 = store.submit(submission("j1", {{"team", "a"}, {"env", "ci"}}), 1).id;
  const auto j2 = store.submit(submission("j2", {{"team", "a"}}), 2).id;
  const auto j3 = store.submit(submission("j3", {{"team", "b"}, {"env", "ci"}}), 3).id;
  const auto j4 = store.submit(submission("j4", {{"team", "a"}, {"env", "ci"}}), 4).id;
  const auto j5 = store.submit(submission("j5"), 5).id;
  ASSERT_TRUE(store.start(j2, 0, 10));
  store.finish(j3, job_status::succeeded, std::nullopt, 20);

  EXPECT_EQ(ids(store.list({})), (std::vector<std::int64_t>{j5, j4, j3, j2, j1}));
  // List views carry labels but no spec.
  const auto all = store.list({});
  EXPECT_TRUE(all[0].spec_json.empty());
  EXPECT_EQ(all[1].labels.at("env"), "ci");

  list_filter queued;
  queued.statuses = {job_status::queued};
  EXPECT_EQ(ids(store.list(queued)), (std::vector<std::int64_t>{j5, j4, j1}));
  list_filter active;
  active.statuses = {job_status::running, job_status::succeeded};
  EXPECT_EQ(ids(store.list(active)), (std::vector<std::int64_t>{j3, j2}));

  list_filter team_a;
  team_a.labels = {{"team", "a"}};
  EXPECT_EQ(ids(store.list(team_a)), (std::vector<std::int64_t>{j4, j2, j1}));
  list_filter both;
  both.labels = {{"team", "a"}, {"env", "ci"}};
  EXPECT_EQ(ids(store.list(both)), (std::vector<std::int64_t>{j4, j1}));
  list_filter none;
  none.labels = {{"team", "b"}, {"env", "prod"}};
  EXPECT_TRUE(store.list(none).empty());

  list_filter page;
  page.limit = 2;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j5, j4}));
  page.before_id = j4;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j3, j2}));
  page.before_id = j2;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j1}));
  page.before_id = j1;
  EXPECT_TRUE(store.list(page).empty());

  list_filter combined;
  combined.statuses = {job_status::queued};
  combined.labels = {{"env", "ci"}};
  combined.before_id = j4;
  EXPECT_EQ(ids(store.list(combined)), (std::vector<std::int64_t>{j1}));
}

TEST(JobStore, StartOnlyFromQueued) {
  job_store store(":memory:");
  const auto id = store.submit(submission("j"), 100).id;
  EXPECT_TRUE(store.start(id, 2, 150));
  auto job = store.get(id);
  EXPECT_EQ(job->status, job_status::running);
  EXPECT_EQ(job->device, 2);
  EXPECT_EQ(job->started_ms, 150);
  EXPECT_FALSE(store.start(id, 3, 160));  // already running
  EXPECT_EQ(store.get(id)->device, 2);

  // A requeued job starts again and keeps its first start time.
  store.requeue(id);
  EXPECT_EQ(store.get(id)->status, job_status::queued);
  EXPECT_TRUE(store.start(id, 0, 500));
  EXPECT_EQ(store.get(id)->started_ms, 150);
  EXPECT_EQ(store.get(id)->device, 0);

  store.finish(id, job_status::succeeded, std::nullopt, 900);
  EXPECT_FALSE(store.start(id, 0, 1000));
  EXPECT_FALSE(store.start(id + 1, 0, 1000));  // no such job
}

TEST(JobStore, CancelOutcomes) {
  job_store store(":memory:");
  const auto queued = store.submit(submission("q"), 1).id;
  const auto running = store.submit(submission("r"), 2).id;
  const auto finished = store.submit(submission("f"), 3).id;
  ASSERT_TRUE(store.start(running, 0, 10));
  store.finish(finished, job_status::failed, point_error{"internal", "boom"}, 20);

  EXPECT_EQ(store.cancel(queued, 100), cancel_outcome::cancelled);
  const auto q = store.get(queued);
  EXPECT_EQ(q->status, job_status::cancelled);
  EXPECT_TRUE(q->cancel_requested);
  EXPECT_EQ(q->finished_ms, 100);
  ASSERT_TRUE(q->error.has_value());
  EXPECT_EQ(q->error->type, "cancelled");
  EXPECT_FALSE(store.start(queued, 0, 110));
  EXPECT_EQ(store.get(queued)->status, job_status::cancelled);

  EXPECT_EQ(store.cancel(running, 100), cancel_outcome::requested);
  const auto r = store.get(running);
  EXPECT_EQ(r->status, job_status::running);  // the scheduler stops it
  EXPECT_TRUE(r->cancel_requested);
  EXPECT_FALSE(r->finished_ms.has_value());

  EXPECT_EQ(store.cancel(finished, 100), cancel_outcome::already_finished);
  EXPECT_EQ(store.get(finished)->status, job_status::failed);
  EXPECT_FALSE(store.get(finished)->cancel_requested);
  EXPECT_EQ(store.cancel(queued, 200), cancel_outcome::already_finished);

  EXPECT_EQ(store.cancel(9999, 100), cancel_outcome::not_found);
}

TEST(JobStore, AddResultsUpdatesProgressAndBest) {
  job_store store(":memory:");
  const auto id = store.submit(submission("j", {}, 6), 1).id;
  const auto other = store.submit(submission("other", {}, 2), 1).id;
  ASSERT_TRUE(store.start(id, 0, 2));

  const std::vector<result_row> batch{row(id, 2, true, 50.0), row(id, 0, true, 80.0),
                                      row(id, 4, false, std::nullopt), row(other, 0, true, 1.0)};
  store.add_results(batch, 10);
  auto job = store.get(id);
  EXPECT_EQ(job->progress.done, 3u);
  EXPECT_EQ(job->progress.ok, 2u);
  EXPECT_EQ(job->progress.failed, 1u);
  ASSERT_TRUE(job->best.has_value());
  EXPECT_EQ(job->best->index, 2u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 50.0);
  EXPECT_EQ(job->best->params_json, R"({"M":200})");
  EXPECT_EQ(store.get(other)->progress.done, 1u);
  EXPECT_EQ(store.get(other)->best->index, 0u);

  // A failed point is never best, even with a (bogus) lower median; a slower ok point is not
  // either; a faster one is.
  store.add_results(std::vector<result_row>{row(id, 5, false, 1.0), row(id, 1, true, 60.0)}, 11);
  job = store.get(id);
  EXPECT_EQ(job->best->index, 2u);
  EXPECT_EQ(job->progress.failed, 2u);
  store.add_results(std::vector<result_row>{row(id, 3, true, 49.5)}, 12);
  job = store.get(id);
  EXPECT_EQ(job->best->index, 3u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 49.5);
  EXPECT_EQ(job->progress.done, 6u);
  EXPECT_EQ(job->progress.ok, 4u);

  // A duplicate row is ignored: progress is not counted twice and the stored row is unchanged.
  auto dup = row(id, 3, true, 1.0);
  dup.result_json = R"({"replaced":true})";
  store.add_results(std::vector<result_row>{dup}, 13);
  job = store.get(id);
  EXPECT_EQ(job->progress.done, 6u);
  EXPECT_EQ(job->progress.ok, 4u);
  EXPECT_EQ(job->best->index, 3u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 49.5);
  const auto stored = store.results(id, 3, 1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].result_json, R"({"index":3})");

  store.add_results(std::span<const result_row>{}, 14);  // no-op
  EXPECT_EQ(store.get(id)->progress.done, 6u);
}

TEST(JobStore, OnlyFailedPointsMeansNoBest) {
  job_store store(":memory:");
  const auto id = store.submit(submission("j"), 1).id;
  store.add_results(
      std::vector<result_row>{row(id, 0, false, std::nullopt), row(id, 1, false, 3.0)}, 2);
  const auto job = store.get(id);
  EXPECT_EQ(job->progress.failed, 2u);
  EXPECT_FALSE(job->best.has_value());
}

TEST(JobStore, ResultIndicesSortedAndPaging) {
  job_store store(":memory:");
  const auto id = store.submit(submission("j", {}, 10), 1).id;
  std::vector<result_row> rows;
  for (std::uint64_t i : {7u, 2u, 9u, 0u, 5u})
    rows.push_back(row(id, i, true, double(i + 1)));
  store.add_results(rows, 5);
  EXPECT_EQ(store.result_indices(id), (std::vector<std::uint64_t>{0, 2, 5, 7, 9}));
  EXPECT_TRUE(store.result_indices(id + 1).empty());

  auto indices = [](const std::vector<stored_result>& r) {
    std::vector<std::uint64_t> out;
    for (const auto& x : r)
      out.push_back(x.index);
    return out;
  };
  EXPECT_EQ(indices(store.results(id, 0, 2)), (std::vector<std::uint64_t>{0, 2}));
  // Offsets count rows, not indices (index 3 has no row yet).
  EXPECT_EQ(indices(store.results(id, 2, 2)), (std::vector<std::uint64_t>{5, 7}));
  EXPECT_EQ(indices(store.results(id, 4, 10)), (std::vector<std::uint64_t>{9}));
  EXPECT_TRUE(store.results(id, 5, 10).empty());
  EXPECT_EQ(indices(store.results(id, 0, UINT64_MAX)).size(), 5u);
  const auto first = store.results(id, 1, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].params_json, R"({"M":200})");
  EXPECT_EQ(first[0].result_json, R"({"index":2})");
}

TEST(JobStore, PendingRequeueFinishAndCounts) {
  job_store store(":memory:");
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 2).id;
  const auto c = store.submit(submission("c"), 3).id;
  const auto d = store.submit(submission("d"), 4).id;
  ASSERT_TRUE(store.start(b, 1, 10));
  ASSERT_EQ(store.cancel(b, 11), cancel_outcome::requested);
  store.finish(c, job_status::succeeded, std::nullopt, 12);

  const auto pending = store.pending();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].id, a);
  EXPECT_EQ(pending[0].status, job_status::queued);
  EXPECT_EQ(pending[0].priority, 3);
  EXPECT_EQ(pending[0].engine, engine_kind::mock);
  EXPECT_EQ(pending[0].requested_device, 1);
  EXPECT_EQ(pending[1].id, b);
  EXPECT_EQ(pending[1].status, job_status::running);
  EXPECT_TRUE(pending[1].cancel_requested);
  EXPECT_EQ(pending[2].id, d);

  store.requeue(b);
  EXPECT_EQ(store.get(b)->status, job_status::queued);
  store.requeue(c);  // only running jobs go back to the queue
  EXPECT_EQ(store.get(c)->status, job_status::succeeded);

  store.finish(d, job_status::failed, point_error{"device_fault", "worker crashed"}, 99);
  const auto failed = store.get(d);
  EXPECT_EQ(failed->status, job_status::failed);
  EXPECT_EQ(failed->finished_ms, 99);
  ASSERT_TRUE(failed->error.has_value());
  EXPECT_EQ(failed->error->type, "device_fault");
  EXPECT_EQ(failed->error->message, "worker crashed");
  EXPECT_FALSE(store.get(c)->error.has_value());

  const auto counts = store.count_by_status();
  EXPECT_EQ(counts.at(job_status::queued), 2);
  EXPECT_EQ(counts.at(job_status::succeeded), 1);
  EXPECT_EQ(counts.at(job_status::failed), 1);
  EXPECT_EQ(counts.count(job_status::running), 0u);
  EXPECT_EQ(counts.count(job_status::cancelled), 0u);
}

// --- database ----------------------------------------------------------------------------------

class temp_dir {
 public:
  temp_dir() {
    std::random_device rd;
    m_path = std::filesystem::temp_directory_path() /
             ("kernelscan-unit-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(m_path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string file(const std::string& name) const { return (m_path / name).string(); }

 private:
  std::filesystem::path m_path;
};

std::int64_t scalar(database& db, const std::string& sql) {
  auto s = db.prepare(sql);
  EXPECT_TRUE(s->step()) << sql;
  return s->int64(0);
}

// Runs `sql` on a plain SQLite connection to `path`.
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

constexpr std::array<std::string_view, 2> k_test_steps{
    "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);",
    "ALTER TABLE t ADD COLUMN y INTEGER; INSERT INTO t VALUES (2, 3);"};

TEST(Database, MigrationsAppliedOnce) {
  database mem(":memory:", schema_migrations());
  EXPECT_EQ(mem.user_version(), int(schema_migrations().size()));
  EXPECT_EQ(scalar(mem, "PRAGMA application_id"), 0x4B534E31);

  temp_dir dir;
  const auto path = dir.file("test.db");
  {
    database db(path, k_test_steps);
    EXPECT_EQ(db.user_version(), 2);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 2);
  }
  {
    // Re-running a step would fail (the table exists) or duplicate its rows.
    database db(path, k_test_steps);
    EXPECT_EQ(db.user_version(), 2);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 2);
  }
  {
    // Only the new step runs on a database at version 1.
    const std::array<std::string_view, 1> first{k_test_steps[0]};
    const auto path1 = dir.file("v1.db");
    { database db(path1, first); }
    database db(path1, k_test_steps);
    EXPECT_EQ(db.user_version(), 2);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 2);
  }
  {
    // The real schema, reopened through job_store, keeps its jobs.
    const auto store_path = dir.file("store.db");
    std::int64_t id = 0;
    {
      job_store store(store_path);
      id = store.submit(submission("durable"), 1).id;
    }
    job_store store(store_path);
    ASSERT_TRUE(store.get(id).has_value());
    EXPECT_EQ(store.get(id)->name, "durable");
  }
}

TEST(Database, RefusesAnotherApplicationsFile) {
  temp_dir dir;
  const auto path = dir.file("other.db");
  raw_exec(path, "PRAGMA application_id=123; CREATE TABLE foreign_data (x);");
  try {
    database db(path, schema_migrations());
    FAIL() << "opened";
  } catch (const storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a kernelscan database"), std::string::npos)
        << e.what();
    EXPECT_FALSE(e.unavailable());
  }
  // Tables of an application that sets no application_id are refused too.
  const auto anonymous = dir.file("anonymous.db");
  raw_exec(anonymous, "CREATE TABLE foreign_data (x); PRAGMA user_version=5;");
  EXPECT_THROW((void)database(anonymous, schema_migrations()), storage_error);
}

TEST(Database, RefusesANewerSchema) {
  temp_dir dir;
  const auto path = dir.file("newer.db");
  { database db(path, k_test_steps); }
  const std::array<std::string_view, 1> older{k_test_steps[0]};
  try {
    database db(path, older);
    FAIL() << "opened";
  } catch (const storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this kernelscan knows"), std::string::npos)
        << e.what();
  }
  // The same check against the real schema, with user_version set behind its back.
  const auto real = dir.file("real.db");
  { database db(real, schema_migrations()); }
  raw_exec(real, "PRAGMA user_version=" + std::to_string(schema_migrations().size() + 1));
  EXPECT_THROW((void)job_store(real), storage_error);
}

TEST(Database, TransactionRollsBackUnlessCommitted) {
  database db(":memory:", k_test_steps);
  {
    database::transaction tx(db);
    db.exec("INSERT INTO t VALUES (10, 10)");
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 3);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 2);
  {
    database::transaction tx(db);
    db.exec("INSERT INTO t VALUES (11, 11)");
    tx.commit();
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 3);
  // An exception unwinding through a transaction rolls it back.
  try {
    database::transaction tx(db);
    db.exec("INSERT INTO t VALUES (12, 12)");
    db.exec("INSERT INTO no_such_table VALUES (1)");
    tx.commit();
  } catch (const storage_error&) {
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), 3);
}

TEST(Database, StatementsBindAndReadValues) {
  database db(":memory:", k_test_steps);
  {
    auto s = db.prepare("INSERT INTO t VALUES (?, ?)");
    s->bind(1, std::int64_t(-5)).bind(2, nullptr);
    s->run();
  }
  auto q = db.prepare("SELECT x, y, 'text', 2.5 FROM t WHERE x = ?");
  q->bind(1, std::optional<std::int64_t>(-5));
  ASSERT_TRUE(q->step());
  EXPECT_EQ(q->int64(0), -5);
  EXPECT_FALSE(q->opt_int64(1).has_value());
  EXPECT_EQ(q->text(2), "text");
  EXPECT_EQ(q->opt_text(2), "text");
  EXPECT_DOUBLE_EQ(q->real(3), 2.5);
  EXPECT_FALSE(q->step());
  EXPECT_THROW((void)db.prepare("SELECT * FROM missing"), storage_error);
}

// --- imports -----------------------------------------------------------------------------------

job_submission imported(std::uint64_t total) {
  job_submission s = submission("nsys import", {{"source", "nsys"}}, total);
  s.engine = engine_kind::imported;
  s.requested_device.reset();
  s.op = "import";
  return s;
}

std::vector<result_row> imported_rows() {
  // Their job_id is not known yet (0); the store sets it.
  return {row(0, 0, true, 45.5), row(0, 1, true, 4.4), row(0, 2, true, 9.0)};
}

TEST(JobStore, ImportStoresAFinishedJobWithEveryRow) {
  job_store store(":memory:");
  const auto queued = store.submit(submission("measured"), 1).id;
  const auto out = store.import_job(imported(3), imported_rows(), 5000);
  EXPECT_TRUE(out.created);
  EXPECT_GT(out.id, queued);

  const auto job = store.get(out.id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, job_status::succeeded);
  EXPECT_EQ(job->engine, engine_kind::imported);
  EXPECT_EQ(job->op, "import");
  EXPECT_FALSE(job->requested_device);
  EXPECT_FALSE(job->device);
  EXPECT_EQ(job->created_ms, 5000);
  EXPECT_EQ(job->started_ms, 5000);
  EXPECT_EQ(job->finished_ms, 5000);
  EXPECT_EQ(job->progress.total, 3u);
  EXPECT_EQ(job->progress.done, 3u);
  EXPECT_EQ(job->progress.ok, 3u);
  EXPECT_EQ(job->progress.failed, 0u);
  ASSERT_TRUE(job->best);
  EXPECT_EQ(job->best->index, 1u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 4.4);
  EXPECT_EQ(job->spec_json, R"({"kernel":{"op":"gemm"}})");

  EXPECT_EQ(store.result_indices(out.id), (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(store.results(out.id, 2, 1).at(0).result_json, R"({"index":2})");
  list_filter by_label;
  by_label.labels = {{"source", "nsys"}};
  EXPECT_EQ(ids(store.list(by_label)), (std::vector<std::int64_t>{out.id}));
  list_filter done;
  done.statuses = {job_status::succeeded};
  EXPECT_EQ(ids(store.list(done)), (std::vector<std::int64_t>{out.id}));
  // Finished: nothing for the scheduler to run.
  ASSERT_EQ(store.pending().size(), 1u);
  EXPECT_EQ(store.pending()[0].id, queued);
}

TEST(JobStore, ImportIdempotencyKey) {
  job_store store(":memory:");
  auto sub = imported(3);
  sub.idempotency_key = "nightly-7";
  const auto first = store.import_job(sub, imported_rows(), 1);
  const auto again = store.import_job(sub, imported_rows(), 2);
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(again.created);
  EXPECT_FALSE(again.conflict);
  EXPECT_EQ(again.id, first.id);
  sub.request_hash = "another body";
  const auto other = store.import_job(sub, imported_rows(), 3);
  EXPECT_TRUE(other.conflict);
  EXPECT_EQ(store.list({}).size(), 1u);
  EXPECT_EQ(store.get(first.id)->progress.done, 3u);  // not stored twice
}

TEST(JobStore, ImportIsStoredWholeOrNotAtAll) {
  temp_dir dir;
  const std::string path = dir.file("kernelscan.db");
  { job_store create(path); }
  // The third row fails to insert, as a full disk would make it.
  raw_exec(path,
           "CREATE TRIGGER fail_third BEFORE INSERT ON results WHEN NEW.idx = 2 "
           "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
  job_store store(path);
  EXPECT_THROW(store.import_job(imported(3), imported_rows(), 1), storage_error);
  EXPECT_TRUE(store.list({}).empty());
  EXPECT_TRUE(store.result_indices(1).empty());
  // The store goes on working: an import that avoids the trigger is stored.
  auto rows = imported_rows();
  rows.pop_back();
  const auto out = store.import_job(imported(2), rows, 2);
  EXPECT_TRUE(out.created);
  EXPECT_EQ(store.get(out.id)->progress.done, 2u);
  EXPECT_EQ(store.result_indices(out.id).size(), 2u);
}

}  // namespace
}  // namespace kernelscan
