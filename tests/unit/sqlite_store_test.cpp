// The SQLite connection (database.hpp) and what only the SQLite store does: migrations by
// user_version, the application_id check, statements, transactions, a failing write. The store's
// behaviour through its interface is tested for every backend in tests/storage/.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "storage/database.hpp"
#include "storage/sqlite_job_store.hpp"
#include "storage/sqlite_migrations.hpp"

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

// ----------------------------------------------------------------------------------

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

// Claims the store's next queued job, which must be `id`, and ends it succeeded.
void claim_and_finish(sqlite_job_store& store, std::int64_t id) {
  claim_request r;
  r.node = "n";
  r.engine = "mock";
  r.device = 1;
  r.now_ms = 3;
  const auto lease = store.claim(r)->lease;
  EXPECT_EQ(lease.job_id, id);
  EXPECT_TRUE(store.finish("n", lease, job_status::succeeded, std::nullopt, 4, std::nullopt));
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
  database mem(":memory:", sqlite_migrations());
  EXPECT_EQ(mem.user_version(), int(sqlite_migrations().size()));
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
      sqlite_job_store store(store_path);
      id = store.submit(submission("durable"), 1).id;
    }
    sqlite_job_store store(store_path);
    ASSERT_TRUE(store.get(id).has_value());
    EXPECT_EQ(store.get(id)->name, "durable");
  }
}

TEST(Database, RefusesAnotherApplicationsFile) {
  temp_dir dir;
  const auto path = dir.file("other.db");
  raw_exec(path, "PRAGMA application_id=123; CREATE TABLE foreign_data (x);");
  try {
    database db(path, sqlite_migrations());
    FAIL() << "opened";
  } catch (const storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a kernelscan database"), std::string::npos)
        << e.what();
    EXPECT_FALSE(e.unavailable());
  }
  // Tables of an application that sets no application_id are refused too.
  const auto anonymous = dir.file("anonymous.db");
  raw_exec(anonymous, "CREATE TABLE foreign_data (x); PRAGMA user_version=5;");
  EXPECT_THROW((void)database(anonymous, sqlite_migrations()), storage_error);
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
  { database db(real, sqlite_migrations()); }
  raw_exec(real, "PRAGMA user_version=" + std::to_string(sqlite_migrations().size() + 1));
  EXPECT_THROW((void)sqlite_job_store(real), storage_error);
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

// A database written before rows carried their score, flags and cache origin in columns: the
// migration fills them in from each row's JSON, and the rows read back as they were stored.
TEST(SqliteStore, MigrationFillsScoresFlagsAndCacheOriginFromOldRows) {
  temp_dir dir;
  const auto path = dir.file("old.db");
  const std::string scored =
      R"({"index":0,"status":"ok","flags":["excessive_speedup","faster_than_roofline"],)"
      R"("fitness":{"correct":true,"speedup":2.5,"latency_score":null,"combined_score":0.75}})";
  const std::string failed = R"({"index":1,"status":"failed","flags":[],"fitness":null})";
  const std::string cached =
      R"({"index":0,"status":"ok","flags":[],"fitness":{"correct":false,"speedup":null,)"
      R"("latency_score":0.5,"combined_score":0},"cache":{"hit":true,"job_id":1}})";
  {
    const auto steps = sqlite_migrations().first(2);
    database db(path, steps);
    db.exec(
        "INSERT INTO jobs (id, name, status, priority, engine, op, total_points, created_ms) "
        "VALUES (1, 'a', 'succeeded', 0, 'mock', 'gemm', 2, 1), "
        "(2, 'b', 'succeeded', 0, 'mock', 'gemm', 1, 1)");
    auto s = db.prepare(
        "INSERT INTO results (job_id, idx, status, params, result, created_ms) VALUES "
        "(?, ?, ?, '{}', ?, 1)");
    for (const auto& [job, idx, status, text] :
         std::vector<std::tuple<int, int, std::string, std::string>>{
             {1, 0, "ok", scored}, {1, 1, "failed", failed}, {2, 0, "ok", cached}}) {
      s->bind(1, job).bind(2, idx).bind(3, status).bind(4, text);
      s->run();
      s->reset();
    }
  }
  sqlite_job_store store(path);
  const auto points = store.scored_points(1);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_TRUE(points[0].ok);
  EXPECT_TRUE(points[0].correct);
  EXPECT_DOUBLE_EQ(points[0].combined_score, 0.75);
  EXPECT_EQ(points[0].speedup, 2.5);
  EXPECT_FALSE(points[0].latency_score);
  EXPECT_FALSE(points[1].ok);
  EXPECT_FALSE(points[1].correct);
  EXPECT_EQ(points[1].combined_score, 0.0);
  EXPECT_EQ(points[0].flags,
            (std::vector<std::string>{"excessive_speedup", "faster_than_roofline"}));
  EXPECT_TRUE(points[1].flags.empty());
  const auto copied = store.scored_points(2);
  ASSERT_EQ(copied.size(), 1u);
  EXPECT_EQ(copied[0].latency_score, 0.5);
  EXPECT_TRUE(copied[0].flags.empty());
  EXPECT_EQ(store.results(1, 0, 1).at(0).result_json, scored);
  // A row copied from the cache reads back with its "cache" member, last, as before.
  EXPECT_EQ(store.results(2, 0, 1).at(0).result_json, cached);
}

job_submission imported(std::uint64_t total) {
  job_submission s = submission("nsys import", {{"source", "nsys"}}, total);
  s.engine = engine_kind::imported;
  s.requested_device.reset();
  s.op = "import";
  return s;
}

std::vector<result_row> imported_rows() {
  return {row(0, 0, true, 45.5), row(0, 1, true, 4.4), row(0, 2, true, 9.0)};
}

TEST(SqliteStore, ImportIsStoredWholeOrNotAtAll) {
  temp_dir dir;
  const std::string path = dir.file("kernelscan.db");
  { sqlite_job_store create(path); }
  // The third row fails to insert, as a full disk would make it.
  raw_exec(path,
           "CREATE TRIGGER fail_third BEFORE INSERT ON results WHEN NEW.idx = 2 "
           "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
  sqlite_job_store store(path);
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

// A deleted job's result rows go after its row, a thousand a transaction; a daemon stopped
// between the two finishes the deletion when it opens the store again.
TEST(SqliteStore, ADeletedJobsRowsGoAfterItAndADeletionCutShortIsFinishedAtOpen) {
  temp_dir dir;
  const std::string path = dir.file("kernelscan.db");
  std::int64_t big = 0, cut_short = 0, kept = 0;
  {
    sqlite_job_store store(path);
    auto finished = [&](std::uint64_t points) {
      const auto id = store.submit(submission("j", {{"team", "perf"}}, points), 1).id;
      std::vector<result_row> rows;
      for (std::uint64_t i = 0; i < points; ++i)
        rows.push_back(row(id, i, true, 1.0 + double(i)));
      store.add_results(rows, 2);
      claim_and_finish(store, id);
      return id;
    };
    big = finished(2500);
    cut_short = finished(1500);
    kept = finished(3);
    EXPECT_EQ(store.delete_job(big), delete_outcome::deleted);
  }
  database db(path, sqlite_migrations());
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM results WHERE job_id = " + std::to_string(big)), 0);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM deleted_jobs"), 0);
  // Cut short: the job's row went, and the deletion was recorded, but not one result row.
  db.exec("PRAGMA foreign_keys=OFF");
  db.exec("BEGIN; DELETE FROM job_specs WHERE job_id = " + std::to_string(cut_short) +
          "; DELETE FROM job_labels WHERE job_id = " + std::to_string(cut_short) +
          "; INSERT INTO deleted_jobs (job_id) VALUES (" + std::to_string(cut_short) +
          "); DELETE FROM jobs WHERE id = " + std::to_string(cut_short) + "; COMMIT;");
  db.exec("PRAGMA foreign_keys=ON");
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM results WHERE job_id = " + std::to_string(cut_short)),
            1500);
  sqlite_job_store reopened(path);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM results WHERE job_id = " + std::to_string(cut_short)),
            0);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM deleted_jobs"), 0);
  EXPECT_EQ(reopened.result_indices(kept).size(), 3u);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM job_labels"), 1);  // the kept job's alone
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM job_specs"), 1);
}

// A new database frees pages incrementally: a deleted job's rows give their pages back to the
// file system, and the file shrinks at the next checkpoint. One made before (auto_vacuum NONE)
// keeps them, as it did, until a VACUUM.
TEST(SqliteStore, ADeletedJobsPagesGoBackToTheFileSystem) {
  temp_dir dir;
  const std::string path = dir.file("kernelscan.db");
  std::int64_t big = 0;
  {
    sqlite_job_store store(path);
    big = store.submit(submission("j", {}, 4000), 1).id;
    const auto kept = store.submit(submission("k", {}, 3), 1).id;
    std::vector<result_row> rows;
    for (std::uint64_t i = 0; i < 4000; ++i) {
      rows.push_back(row(big, i, true, 1.0));
      rows.back().result_json =
          R"({"index":)" + std::to_string(i) + R"(,"pad":")" + std::string(2000, 'x') + R"("})";
    }
    store.add_results(rows, 2);
    const std::vector<result_row> one{row(kept, 0, true, 1.0)};
    store.add_results(one, 2);
    for (std::int64_t id : {big, kept})
      claim_and_finish(store, id);
    raw_exec(path, "PRAGMA wal_checkpoint(TRUNCATE)");
    const auto full = std::filesystem::file_size(path);
    EXPECT_GT(full, 8'000'000u);
    EXPECT_EQ(store.delete_job(big), delete_outcome::deleted);
    raw_exec(path, "PRAGMA wal_checkpoint(TRUNCATE)");
    EXPECT_LT(std::filesystem::file_size(path), full / 4) << "the freed pages stayed in the file";
    EXPECT_EQ(store.result_indices(kept).size(), 1u);
  }
  database db(path, sqlite_migrations());
  EXPECT_EQ(scalar(db, "PRAGMA auto_vacuum"), 2);  // incremental
  EXPECT_EQ(scalar(db, "PRAGMA freelist_count"), 0);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM results WHERE job_id = " + std::to_string(big)), 0);
}

}  // namespace
}  // namespace kernelscan
