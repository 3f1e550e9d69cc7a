// The daemon under sustained load with 100,000 jobs in its database:
//  1. list and filter queries, one at a time (target: each under 50 ms);
//  2. for `seconds` (default 60): wrk on GET job (random ids) and on a filtered list, plus a
//     job-submission loop, at once; errors, p50/p99, and the daemon's RSS before and after
//     (target: no errors, RSS growth under 10%).
//
//   build/tests/bench/bench_load [seconds=60] [jobs=100000]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/database.hpp"
#include "storage/sqlite_migrations.hpp"
#include "tests/support/daemon_process.hpp"

namespace {

using kernelscan::json;
using kernelscan::testing::daemon_process;
using clock_type = std::chrono::steady_clock;

// Writes `n` finished jobs straight into a new database (the daemon's schema, from its own
// migrations): submitting them over HTTP would sync each to disk and take many minutes.
void fill(const std::string& path, int n) {
  kernelscan::database db(path, kernelscan::sqlite_migrations());
  kernelscan::database::transaction tx(db);
  const char* statuses[] = {"succeeded", "succeeded", "succeeded", "failed", "cancelled"};
  const std::string spec =
      R"({"name":"filled","kernel":{"op":"stream","variant":"copy","n":1024}})";
  for (int i = 1; i <= n; ++i) {
    const std::string team = "t" + std::to_string(i % 10), batch = "b" + std::to_string(i % 100);
    {
      auto s = db.prepare(
          "INSERT INTO jobs (id, name, status, priority, engine, op, total_points, done_points, "
          "ok_points, created_ms, started_ms, finished_ms, labels) VALUES "
          "(?, ?, ?, 0, 'auto', 'stream', 1, 1, 1, ?, ?, ?, ?)");
      const std::string labels = "5:batch" + std::to_string(batch.size()) + ":" + batch + "4:team" +
                                 std::to_string(team.size()) + ":" + team;
      s->bind(1, std::int64_t(i))
          .bind(2, std::string_view("filled job"))
          .bind(3, std::string_view(statuses[i % 5]))
          .bind(4, std::int64_t(1700000000000) + i)
          .bind(5, std::int64_t(1700000000000) + i)
          .bind(6, std::int64_t(1700000000000) + i + 5)
          .bind(7, labels);
      s->run();
    }
    {
      auto s = db.prepare("INSERT INTO job_specs (job_id, spec) VALUES (?, ?)");
      s->bind(1, std::int64_t(i)).bind(2, spec);
      s->run();
    }
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"team", team}, {"batch", batch}}) {
      auto s = db.prepare("INSERT INTO job_labels (job_id, key, value) VALUES (?, ?, ?)");
      s->bind(1, std::int64_t(i)).bind(2, k).bind(3, v);
      s->run();
    }
  }
  tx.commit();
}

long rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

long sqlite_kib(const daemon_process& d) {
  const std::string text = d.get("/metrics").text;
  const std::string key = "\nkernelscan_sqlite_memory_bytes ";
  const auto at = text.find(key);
  return at == std::string::npos ? -1 : std::stol(text.substr(at + key.size())) / 1024;
}

struct wrk_result {
  double rps = 0, p50_ms = 0, p99_ms = 0;
  long requests = 0, errors = 0;
};

double to_ms(const std::string& v) {
  const double x = std::stod(v);
  if (v.find("us") != std::string::npos) return x / 1000;
  if (v.find("ms") != std::string::npos) return x;
  return x * 1000;  // "s"
}

wrk_result run_wrk(const std::string& args) {
  wrk_result r;
  FILE* p = popen(("wrk --latency " + args + " 2>&1").c_str(), "r");
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) {
    char v[64];
    long a = 0, b = 0;
    if (std::sscanf(line, "Requests/sec: %lf", &r.rps) == 1) continue;
    if (std::sscanf(line, " 50%% %63s", v) == 1) r.p50_ms = to_ms(v);
    if (std::sscanf(line, " 99%% %63s", v) == 1) r.p99_ms = to_ms(v);
    if (std::sscanf(line, " %ld requests in", &a) == 1) r.requests = a;
    if (std::sscanf(line, " Non-2xx or 3xx responses: %ld", &a) == 1) r.errors += a;
    if (std::sscanf(line, " Socket errors: connect %ld, read %ld", &a, &b) == 2) r.errors += a + b;
  }
  if (p) pclose(p);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 60;
  const int jobs = argc > 2 ? std::atoi(argv[2]) : 100000;
  if (std::system("command -v wrk >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "bench_load needs wrk (apt-get install wrk)\n");
    return 1;
  }
  daemon_process daemon(
      {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--rate-limit", "0"}});
  std::filesystem::create_directories(daemon.data_dir() + "/data");
  const auto t0 = clock_type::now();
  fill(daemon.data_dir() + "/data/kernelscan.db", jobs);
  const double fill_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  daemon.start();

  // 1. Queries with 100,000 jobs, one at a time.
  std::printf("bench_load: %d jobs in the database (filled in %.1f s); %ld cores\n", jobs, fill_s,
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("  list and filter queries, 50 each, one at a time (target: each < 50 ms):\n");
  const std::vector<std::pair<const char*, std::string>> queries{
      {"newest 50", "/api/v1/jobs?limit=50"},
      {"status=failed", "/api/v1/jobs?status=failed&limit=50"},
      {"label team", "/api/v1/jobs?label.team=t3&limit=50"},
      {"two labels", "/api/v1/jobs?label.team=t3&label.batch=b13&limit=50"},
      {"status + label", "/api/v1/jobs?status=cancelled&label.team=t4&limit=50"},
      {"old page (cursor)", "/api/v1/jobs?limit=50&cursor=" + std::to_string(jobs / 50)},
      {"rare label (none)", "/api/v1/jobs?label.team=nobody&limit=50"},
      {"one job", "/api/v1/jobs/" + std::to_string(jobs / 2)},
  };
  httplib::Client c("127.0.0.1", daemon.port());
  c.set_keep_alive(true);
  bool all_under = true;
  for (const auto& [name, path] : queries) {
    std::vector<double> ms;
    std::size_t rows = 0;
    for (int i = 0; i < 50; ++i) {
      const auto q0 = clock_type::now();
      const auto r = c.Get(path.c_str());
      ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - q0).count());
      if (!r || r->status != 200) {
        std::fprintf(stderr, "query %s failed\n", path.c_str());
        return 1;
      }
      if (i == 0) rows = json::parse(r->body).value("jobs", json::array({json::object()})).size();
    }
    std::sort(ms.begin(), ms.end());
    all_under = all_under && ms.back() < 50;
    std::printf("    %-20s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  (%zu rows)\n", name,
                ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), rows);
  }
  std::printf("    every query under 50 ms: %s\n", all_under ? "yes" : "NO");

  // 2. Sustained mixed load: a warm-up (caches, connection pools, allocator arenas fill), then
  // the measured run, sampling the daemon's RSS every 10 s: growth in steady state is what a
  // leak would show.
  const std::string lua = daemon.data_dir() + "/random_job.lua";
  std::ofstream(lua) << "math.randomseed(os.time())\n"
                        "request = function()\n"
                        "  return wrk.format('GET', '/api/v1/jobs/' .. math.random(1, "
                     << jobs << "))\nend\n";
  const std::string base = "http://127.0.0.1:" + std::to_string(daemon.port());
  struct load_result {
    wrk_result gets, list;
    long submitted = 0, submit_errors = 0;
    std::vector<double> submit_ms;
    std::vector<long> rss;
    std::vector<long> sqlite_kib;  // SQLite's own share, from /metrics
  };
  auto run_load = [&](int duration) {
    load_result out;
    std::atomic<bool> stop{false};
    std::atomic<long> submitted{0}, submit_errors{0};
    std::thread submitter([&] {
      httplib::Client s("127.0.0.1", daemon.port());
      s.set_keep_alive(true);
      const std::string body =
          R"({"name":"load","labels":{"team":"load"},"kernel":{"op":"stream","variant":"copy","n":4096}})";
      while (!stop) {
        const auto s0 = clock_type::now();
        const auto r = s.Post("/api/v1/jobs", body, "application/json");
        out.submit_ms.push_back(
            std::chrono::duration<double, std::milli>(clock_type::now() - s0).count());
        if (r && r->status == 201)
          ++submitted;
        else
          ++submit_errors;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    std::thread sampler([&] {
      for (int t = 0; t <= duration && !stop; t += 10) {
        out.rss.push_back(rss_kb(daemon.pid()));
        out.sqlite_kib.push_back(sqlite_kib(daemon));
        for (int k = 0; k < 100 && !stop; ++k)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    std::thread lists([&] {
      out.list = run_wrk("-t1 -c1 -d" + std::to_string(duration) + "s '" + base +
                         "/api/v1/jobs?label.team=t3&status=succeeded&limit=50'");
    });
    out.gets = run_wrk("-t1 -c2 -d" + std::to_string(duration) + "s -s " + lua + " " + base + "/");
    lists.join();
    stop = true;
    submitter.join();
    sampler.join();
    out.submitted = submitted;
    out.submit_errors = submit_errors;
    std::sort(out.submit_ms.begin(), out.submit_ms.end());
    return out;
  };

  const long rss_cold = rss_kb(daemon.pid());
  const auto warm = run_load(40);
  const long rss_before = rss_kb(daemon.pid());
  const auto load = run_load(seconds);
  const long rss_after = rss_kb(daemon.pid());
  const auto& gets = load.gets;
  const auto& list = load.list;

  std::printf(
      "  %d s of load at once, after a 40 s warm-up (wrk; target: no errors, RSS "
      "growth < 10%%):\n",
      seconds);
  std::printf(
      "    GET job, random of %d, 2 conns  %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  "
      "errors %ld of %ld\n",
      jobs, gets.rps, gets.p50_ms, gets.p99_ms, gets.errors, gets.requests);
  std::printf(
      "    filtered list, 1 conn            %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  "
      "errors %ld of %ld\n",
      list.rps, list.p50_ms, list.p99_ms, list.errors, list.requests);
  if (!load.submit_ms.empty()) {
    const auto& ms = load.submit_ms;
    std::printf(
        "    job submissions, 1 client        %8.1f /s     p50 %6.2f ms  p99 %6.2f ms  "
        "errors %ld of %ld\n",
        double(load.submitted) / seconds, ms[ms.size() / 2], ms[ms.size() * 99 / 100],
        load.submit_errors, load.submitted + load.submit_errors);
  }
  std::printf(
      "    daemon RSS: %ld KiB cold, %ld KiB after the warm-up, %ld KiB after the run: "
      "%+.1f%% over the run\n",
      rss_cold, rss_before, rss_after, 100.0 * double(rss_after - rss_before) / double(rss_before));
  std::printf("    RSS every 10 s during the run (KiB):");
  for (long r : load.rss)
    std::printf(" %ld", r);
  std::printf("\n    of which SQLite (KiB):               ");
  for (long r : load.sqlite_kib)
    std::printf(" %ld", r);
  std::printf("\n");
  const long errors = warm.gets.errors + warm.list.errors + warm.submit_errors + gets.errors +
                      list.errors + load.submit_errors;
  return errors == 0 ? 0 : 1;
}
