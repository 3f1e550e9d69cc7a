// Per-point overhead of the daemon on a 10,000-point mock sweep with no delay, next to the cost
// of inserting the same rows into SQLite directly, measured in the same run.
//
//   build/tests/bench/bench_sweep [points] [runs]
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon_process.hpp"

namespace {

using kernelscan::json;
using kernelscan::testing::daemon_process;
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double iso_ms(const std::string& iso) {
  // "2026-11-21T21:07:00.123Z": only differences matter, within one day.
  const int h = std::stoi(iso.substr(11, 2)), m = std::stoi(iso.substr(14, 2));
  const double s = std::stod(iso.substr(17, 6));
  return ((h * 60 + m) * 60 + s) * 1000;
}

json sweep(int points) {
  json values = json::array();
  for (int i = 1; i <= points; ++i)
    values.push_back(i);
  return {{"name", "bench"},
          {"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", "N*1024"}}},
          {"sweep", {{"N", values}}}};
}

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "sqlite %s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

struct row {
  std::int64_t index;
  std::string params, result;
  double median;
};

// Inserts `rows` into a fresh file database with kernelscan's pragmas and the same results
// table, `batch` rows per transaction, each row also bumping a progress counter as the daemon
// does. Returns microseconds per row.
double direct_insert(const std::vector<row>& rows, std::size_t batch, const std::string& dir) {
  const std::string path = dir + "/direct-" + std::to_string(batch) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(path + suffix);
  sqlite3* db = nullptr;
  check(sqlite3_open(path.c_str(), &db), db, "open");
  check(sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE jobs (id INTEGER PRIMARY KEY, done INTEGER NOT NULL);"
                     "INSERT INTO jobs VALUES (1, 0);"
                     "CREATE TABLE results (job_id INTEGER NOT NULL, idx INTEGER NOT NULL, "
                     "status TEXT NOT NULL, median_us REAL, params TEXT NOT NULL, "
                     "result TEXT NOT NULL, created_ms INTEGER NOT NULL, "
                     "PRIMARY KEY (job_id, idx)) WITHOUT ROWID;",
                     nullptr, nullptr, nullptr),
        db, "schema");
  sqlite3_stmt *insert = nullptr, *update = nullptr;
  check(sqlite3_prepare_v2(db, "INSERT INTO results VALUES (1, ?, 'ok', ?, ?, ?, 0)", -1, &insert,
                           nullptr),
        db, "prepare");
  check(
      sqlite3_prepare_v2(db, "UPDATE jobs SET done = done + 1 WHERE id = 1", -1, &update, nullptr),
      db, "prepare");
  const auto t0 = clock_type::now();
  for (std::size_t i = 0; i < rows.size(); i += batch) {
    check(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), db, "begin");
    for (std::size_t j = i; j < std::min(rows.size(), i + batch); ++j) {
      sqlite3_bind_int64(insert, 1, rows[j].index);
      sqlite3_bind_double(insert, 2, rows[j].median);
      sqlite3_bind_text(insert, 3, rows[j].params.data(), int(rows[j].params.size()),
                        SQLITE_STATIC);
      sqlite3_bind_text(insert, 4, rows[j].result.data(), int(rows[j].result.size()),
                        SQLITE_STATIC);
      check(sqlite3_step(insert), db, "insert");
      sqlite3_reset(insert);
      check(sqlite3_step(update), db, "update");
      sqlite3_reset(update);
    }
    check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
  }
  const double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
  sqlite3_finalize(insert);
  sqlite3_finalize(update);
  sqlite3_close(db);
  return us / double(rows.size());
}

}  // namespace

int main(int argc, char** argv) {
  const int points = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  daemon_process daemon;
  daemon.start();
  (void)daemon.wait_job(daemon.submit(sweep(200)));  // warm-up: workers, caches, WAL

  std::vector<double> server_us, client_us, direct1, direct256;
  std::int64_t last_id = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = clock_type::now();
    last_id = daemon.submit(sweep(points));
    const json job = daemon.wait_job(last_id, std::chrono::seconds(600));
    const double client = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    if (job.value("status", "") != "succeeded") {
      std::fprintf(stderr, "job did not succeed: %s\n", job.dump().c_str());
      return 1;
    }
    const double server = (iso_ms(job["finished_at"]) - iso_ms(job["started_at"])) * 1000;
    server_us.push_back(server / points);
    client_us.push_back(client / points);

    // The same rows, straight into SQLite.
    const auto results = daemon.get("/api/v1/jobs/" + std::to_string(last_id) + "/results");
    std::vector<row> rows;
    for (const auto& r2 : results.body["results"]) {
      rows.push_back({r2["index"].get<std::int64_t>(), r2["params"].dump(), r2.dump(),
                      r2["time_us"]["median"].get<double>()});
    }
    direct1.push_back(direct_insert(rows, 1, daemon.data_dir()));
    direct256.push_back(direct_insert(rows, 256, daemon.data_dir()));
  }

  const double server = median(server_us), client = median(client_us);
  const double d1 = median(direct1), d256 = median(direct256);
  std::printf(
      "bench_sweep: %d-point mock sweep (stream triad, no delay), %d runs, medians; "
      "%ld cores\n",
      points, runs, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("  daemon, per point, job start to end        %8.1f us   (target <= 100 us)\n",
              server);
  std::printf("  daemon, per point, POST to job done        %8.1f us\n", client);
  std::printf("  SQLite direct insert, 1 row per commit     %8.1f us per row\n", d1);
  std::printf("  SQLite direct insert, 256 rows per commit  %8.1f us per row\n", d256);
  std::printf("  ratio daemon / direct 1-row commits        %8.2f\n", server / d1);
  std::printf("  ratio daemon / direct 256-row commits      %8.2f\n", server / d256);
  for (int r = 0; r < runs; ++r) {
    std::printf("  run %d: daemon %.1f us/point, direct %.1f / %.1f us/row\n", r + 1,
                server_us[std::size_t(r)], direct1[std::size_t(r)], direct256[std::size_t(r)]);
  }
  return 0;
}
