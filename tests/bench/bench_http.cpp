// GET /api/v1/jobs/{id} requests per second with 2 connections, next to a bare cpp-httplib
// endpoint serving the same bytes with the same server settings, in the same run. Uses wrk
// when it is installed, else a small keep-alive load client.
//
//   build/tests/bench/bench_http [seconds per round] [rounds]
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon_process.hpp"

namespace {

using kernelscan::json;
using kernelscan::testing::daemon_process;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

bool have_wrk() {
  return std::system("command -v wrk >/dev/null 2>&1") == 0;
}

// Requests per second of GET `path` on 127.0.0.1:`port` with 2 connections.
double load(int port, const std::string& path, int seconds, bool wrk) {
  if (wrk) {
    const std::string cmd = "wrk -t2 -c2 -d" + std::to_string(seconds) +
                            "s http://127.0.0.1:" + std::to_string(port) + path + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char line[512];
    double rps = 0;
    long non2xx = 0;
    while (p && std::fgets(line, sizeof line, p)) {
      std::sscanf(line, "Requests/sec: %lf", &rps);
      std::sscanf(line, "  Non-2xx or 3xx responses: %ld", &non2xx);
    }
    if (p) pclose(p);
    if (non2xx) std::fprintf(stderr, "wrk saw %ld error responses\n", non2xx);
    return rps;
  }
  std::atomic<long> count{0}, errors{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      while (std::chrono::steady_clock::now() < end) {
        auto r = c.Get(path.c_str());
        if (r && r->status == 200)
          ++count;
        else
          ++errors;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  if (errors) std::fprintf(stderr, "load client saw %ld errors\n", errors.load());
  return double(count) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool wrk = have_wrk();

  daemon_process daemon;
  daemon.start();
  json spec = {{"name", "bench"},
               {"labels", {{"bench", "http"}}},
               {"kernel", {{"op", "gemm"}, {"m", "M"}, {"n", 4096}, {"k", 4096}}},
               {"sweep", {{"M", {1024, 2048, 4096}}}}};
  const auto id = daemon.submit(spec);
  (void)daemon.wait_job(id);
  const std::string path = "/api/v1/jobs/" + std::to_string(id);
  const auto body = daemon.get(path).text;

  // The baseline: cpp-httplib with the daemon's settings, answering with the same bytes.
  httplib::Server bare;
  bare.new_task_queue = [] { return new httplib::ThreadPool(48); };
  bare.set_keep_alive_max_count(1000);
  bare.set_tcp_nodelay(true);
  bare.Get(R"(/api/v1/jobs/([^/]+))", [&body](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  const int bare_port = bare.bind_to_any_port("127.0.0.1");
  std::thread server([&] { bare.listen_after_bind(); });
  while (!bare.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));

  (void)load(bare_port, path, 1, wrk);  // warm-up both
  (void)load(daemon.port(), path, 1, wrk);
  std::vector<double> bare_rps, daemon_rps;
  for (int r = 0; r < rounds; ++r) {  // alternate, so drift hits both alike
    bare_rps.push_back(load(bare_port, path, seconds, wrk));
    daemon_rps.push_back(load(daemon.port(), path, seconds, wrk));
  }
  bare.stop();
  server.join();

  const double b = median(bare_rps), d = median(daemon_rps);
  std::printf(
      "bench_http: GET %s (%zu-byte job), 2 connections, %s, %d x %d s rounds, medians; "
      "%ld cores\n",
      path.c_str(), body.size(), wrk ? "wrk -t2 -c2" : "built-in client", rounds, seconds,
      sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("  bare cpp-httplib endpoint   %10.0f req/s\n", b);
  std::printf("  kernelscan GET job          %10.0f req/s\n", d);
  std::printf("  ratio kernelscan / bare     %10.2f   (target >= 0.8)\n", d / b);
  for (int r = 0; r < rounds; ++r) {
    std::printf("  round %d: bare %.0f, kernelscan %.0f req/s\n", r + 1, bare_rps[std::size_t(r)],
                daemon_rps[std::size_t(r)]);
  }
  return 0;
}
