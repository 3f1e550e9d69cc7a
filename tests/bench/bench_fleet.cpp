// A fleet on PostgreSQL next to one daemon on SQLite, in one run (README, "Performance"):
//   1. per-point overhead: a mock sweep with no delay on one device, job start to end per point;
//   2. jobs run per second: one-point jobs submitted by several clients at once, first start to
//      last end, on 3 nodes x 4 mock devices (PostgreSQL) and 1 node x 4 (SQLite);
//   3. claims per second of the store itself: 12 claimers at once (PostgreSQL, a connection
//      each, as 12 devices of 3 nodes) and 4 (SQLite), on a queue of queued jobs.
// It starts its own PostgreSQL (tests/support/postgres_server).
//
//   build/tests/bench/bench_fleet [points=5000] [jobs=600] [runs=3]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "storage/postgres_job_store.hpp"
#include "storage/sqlite_job_store.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/postgres_server.hpp"

namespace {

using kernelscan::json;
using kernelscan::testing::daemon_process;
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double iso_ms(const std::string& iso) {
  const int h = std::stoi(iso.substr(11, 2)), m = std::stoi(iso.substr(14, 2));
  const double s = std::stod(iso.substr(17, 6));
  return ((h * 60 + m) * 60 + s) * 1000;
}

json sweep(int points, const json& device) {
  json values = json::array();
  for (int i = 1; i <= points; ++i)
    values.push_back(i);
  return {{"name", "bench"},
          {"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", "N*1024"}}},
          {"sweep", {{"N", values}}},
          {"device", device},
          {"cache", false}};
}

// Microseconds per point, job start to end, of a `points` sweep on the first daemon.
std::vector<double> per_point(std::vector<std::unique_ptr<daemon_process>>& nodes, int points,
                              int runs, const json& device) {
  (void)nodes[0]->wait_job(nodes[0]->submit(sweep(200, device)));  // warm-up
  std::vector<double> out;
  for (int r = 0; r < runs; ++r) {
    const json job =
        nodes[0]->wait_job(nodes[0]->submit(sweep(points, device)), std::chrono::seconds(600));
    if (job.value("status", "") != "succeeded") {
      throw std::runtime_error("sweep did not succeed: " + job.dump());
    }
    out.push_back((iso_ms(job["finished_at"]) - iso_ms(job["started_at"])) * 1000 / points);
  }
  return out;
}

// One-point jobs, submitted by 6 clients spread over the nodes; jobs per second from the first
// job's start to the last one's end.
double jobs_per_second(std::vector<std::unique_ptr<daemon_process>>& nodes, int jobs) {
  std::vector<std::int64_t> ids(std::size_t(jobs), 0);
  std::vector<std::thread> clients;
  std::atomic<int> next{0};
  std::mutex failure_mutex;
  std::string failure;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      daemon_process& d = *nodes[std::size_t(c) % nodes.size()];
      try {
        for (int i = next++; i < jobs; i = next++) {
          json spec = sweep(1, "any");
          spec["sweep"]["N"] = json::array({i + 1});
          ids[std::size_t(i)] = d.submit(spec);
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(failure_mutex);
        failure = e.what();
        next = jobs;
      }
    });
  }
  for (auto& t : clients)
    t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
  double first = 1e300, last = 0;
  for (const auto id : ids) {
    const json job = nodes[0]->wait_job(id, std::chrono::seconds(600));
    if (job.value("status", "") != "succeeded") {
      throw std::runtime_error("job did not succeed: " + job.dump());
    }
    first = std::min(first, iso_ms(job["started_at"]));
    last = std::max(last, iso_ms(job["finished_at"]));
  }
  return jobs / ((last - first) / 1000);
}

kernelscan::job_submission queued_job(int i) {
  kernelscan::job_submission s;
  s.name = "claim " + std::to_string(i);
  s.op = "stream";
  s.total_points = 1;
  s.spec_json = "{}";
  return s;
}

// Claims per second with `claimers` threads claiming at once until `jobs` queued jobs are gone.
double claims_per_second(const std::vector<kernelscan::job_store*>& stores, int jobs) {
  for (int i = 0; i < jobs; ++i)
    stores[0]->submit(queued_job(i), 1);
  std::atomic<int> claimed{0};
  std::vector<std::thread> threads;
  const auto t0 = clock_type::now();
  for (std::size_t i = 0; i < stores.size(); ++i) {
    threads.emplace_back([&, i] {
      kernelscan::claim_request r;
      r.node = "node" + std::to_string(i / 4);
      r.device = int(i % 4);
      r.engine = "mock";
      r.now_ms = 1;
      while (stores[i]->claim(r))
        ++claimed;
    });
  }
  for (auto& t : threads)
    t.join();
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (claimed != jobs) {
    throw std::runtime_error("claimed " + std::to_string(claimed.load()) + " of " +
                             std::to_string(jobs) + " jobs");
  }
  return jobs / s;
}

std::vector<std::unique_ptr<daemon_process>> start_nodes(int n, int devices,
                                                         const std::string& database) {
  std::vector<std::unique_ptr<daemon_process>> nodes;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args{"--rate-limit", "0"};
    if (!database.empty()) {
      args.insert(args.end(), {"--node", std::string(1, char('a' + i))});
    }
    nodes.push_back(std::make_unique<daemon_process>(daemon_process::options{
        .mock_devices = devices, .extra_args = args, .database = database}));
    nodes.back()->start();
  }
  return nodes;
}

}  // namespace

// Everything it starts (daemons, PostgreSQL) is stopped when this returns or throws.
int run(int points, int jobs, int runs) {
  kernelscan::testing::postgres_server server;

  std::vector<double> sqlite_points, pg_points;
  double sqlite_jobs = 0, pg_jobs = 0;
  {
    auto nodes = start_nodes(1, 4, "");
    sqlite_points = per_point(nodes, points, runs, 0);
    sqlite_jobs = jobs_per_second(nodes, jobs);
  }
  {
    const std::string db = kernelscan::testing::create_database(server.url());
    auto nodes = start_nodes(3, 4, db);
    pg_points = per_point(nodes, points, runs, {{"node", "a"}, {"index", 0}});
    pg_jobs = jobs_per_second(nodes, jobs);
  }
  double sqlite_claims = 0, pg_claims = 0;
  {
    const std::string dir = "/tmp/kernelscan-bench-claims-" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    kernelscan::sqlite_job_store store(dir + "/claims.db");
    sqlite_claims = claims_per_second({&store, &store, &store, &store}, jobs * 5);
    std::filesystem::remove_all(dir);
  }
  {
    kernelscan::postgres_options o;
    o.url = kernelscan::testing::create_database(server.url());
    o.pool_size = 2;
    std::vector<std::unique_ptr<kernelscan::job_store>> owned;
    std::vector<kernelscan::job_store*> stores;
    for (int i = 0; i < 12; ++i) {
      owned.push_back(std::make_unique<kernelscan::postgres_job_store>(o));
      stores.push_back(owned.back().get());
    }
    pg_claims = claims_per_second(stores, jobs * 5);
  }

  const double sp = median(sqlite_points), pp = median(pg_points);
  std::printf("bench_fleet: %d-point sweeps (%d runs, medians), %d one-point jobs; %ld cores\n",
              points, runs, jobs, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("                                            SQLite, 1 x 4    PostgreSQL, 3 x 4\n");
  std::printf(
      "  per-point overhead (job start to end)    %9.1f us     %9.1f us   (%.2fx; target "
      "<= 2x)\n",
      sp, pp, pp / sp);
  std::printf("  one-point jobs run per second            %9.0f        %9.0f\n", sqlite_jobs,
              pg_jobs);
  std::printf("  store claims per second (%2d / 12 at once) %8.0f        %9.0f\n", 4, sqlite_claims,
              pg_claims);
  for (int r = 0; r < runs; ++r) {
    std::printf("  run %d: per point %.1f us (SQLite), %.1f us (PostgreSQL)\n", r + 1,
                sqlite_points[std::size_t(r)], pg_points[std::size_t(r)]);
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? std::atoi(argv[1]) : 5000, argc > 2 ? std::atoi(argv[2]) : 600,
               argc > 3 ? std::atoi(argv[3]) : 3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_fleet: %s\n", e.what());
    return 1;
  }
}
