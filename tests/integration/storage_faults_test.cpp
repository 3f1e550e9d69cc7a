// SQLite storage that stops accepting writes (a full disk, simulated with the daemon's file-size
// limit) and SQLite storage that cannot be opened. PostgreSQL's faults (the server stopped and
// started again) are tested in fleet_test.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <filesystem>
#include <thread>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

json stream_job(int points, double delay_ms) {
  return stream_sweep(points, delay_ms);
}

void set_file_size_limit(pid_t pid, rlim_t bytes) {
  rlimit limit{bytes, RLIM_INFINITY};
  ASSERT_EQ(prlimit(pid, RLIMIT_FSIZE, &limit, nullptr), 0);
}

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out = "cannot open";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

TEST(StorageFaults, DiskFullAnswers503KeepsMeasuredPointsAndRecovers) {
  if (testing_postgres()) GTEST_SKIP() << "SQLite's own faults; the daemon runs on PostgreSQL";
  daemon_process daemon;
  daemon.start();
  const auto before = daemon.submit(stream_job(3, 0));
  ASSERT_EQ(daemon.wait_job(before)["status"], "succeeded");
  const auto running = daemon.submit(stream_job(30, 20));
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/jobs/" + std::to_string(running)).body["progress"]["done"] >= 3;
  }));

  // Every write past the first byte of any file now fails, as on a full disk.
  set_file_size_limit(daemon.pid(), 1);
  const auto refused = daemon.post_json("/api/v1/jobs", stream_job(2, 0));
  EXPECT_EQ(refused.status, 503) << refused.text;
  EXPECT_EQ(refused.body["error"]["type"], "storage_unavailable") << refused.text;
  EXPECT_EQ(refused.header("Retry-After"), "5");
  // Reads still work, and the daemon keeps measuring into memory.
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + std::to_string(before)).status, 200);
  ASSERT_TRUE(eventually(
      [&] {
        const auto m = daemon.get("/metrics").text;
        const auto at = m.find("\nkernelscan_points_unstored ");
        return at != std::string::npos && m.compare(at, 29, "\nkernelscan_points_unstored 0") != 0;
      },
      10s));
  EXPECT_EQ(daemon.get("/healthz").status, 200);

  // Space returns: the held points are stored and the job completes with every point.
  set_file_size_limit(daemon.pid(), RLIM_INFINITY);
  const json job = daemon.wait_job(running);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["progress"]["done"], 30);
  const auto rows = daemon.get("/api/v1/jobs/" + std::to_string(running) + "/results");
  EXPECT_EQ(rows.body["results"].size(), 30u);
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_job(2, 0)))["status"], "succeeded");
  EXPECT_NE(daemon.log().find("storage recovered"), std::string::npos);

  EXPECT_EQ(daemon.terminate(), 0);
  EXPECT_EQ(integrity(daemon.data_dir() + "/data/kernelscan.db"), "ok");
}

TEST(StorageFaults, ADatabaseThatCannotBeOpenedIsAClearStartUpError) {
  if (testing_postgres()) GTEST_SKIP() << "SQLite's own faults; the daemon runs on PostgreSQL";
  daemon_process daemon;
  // The database path is taken by a directory.
  std::filesystem::create_directories(daemon.data_dir() + "/data/kernelscan.db");
  EXPECT_THROW(daemon.start(), std::runtime_error);
  EXPECT_NE(daemon.log().find("cannot open the database"), std::string::npos) << daemon.log();
}

TEST(StorageFaults, AnotherApplicationsDatabaseIsRefused) {
  if (testing_postgres()) GTEST_SKIP() << "SQLite's own faults; the daemon runs on PostgreSQL";
  daemon_process daemon;
  std::filesystem::create_directories(daemon.data_dir() + "/data");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((daemon.data_dir() + "/data/kernelscan.db").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE notes (t TEXT); PRAGMA user_version = 3;", nullptr, nullptr,
               nullptr);
  sqlite3_close(db);
  EXPECT_THROW(daemon.start(), std::runtime_error);
  EXPECT_NE(daemon.log().find("refusing to migrate"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace kernelscan::testing
