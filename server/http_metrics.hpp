#pragma once
// Request counts and latency histograms of the HTTP API, by method and route template, in the
// Prometheus text format (the daemon's other series are added by the /metrics handler).
//
// Threading: thread-safe; observe() takes a short mutex per request.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace kernelscan {

class http_metrics {
 public:
  // Upper bounds of the latency buckets, in seconds (plus +Inf).
  static constexpr std::array<double, 14> k_buckets{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 10, 60};

  // `route` is the matched route's template ("/api/v1/jobs/{id}"), never the raw path, so the
  // number of series stays bounded whatever clients request.
  void observe(std::string_view method, std::string_view route, int status, double seconds);
  // kernelscan_http_requests_total and kernelscan_http_request_duration_seconds.
  std::string exposition() const;

 private:
  struct histogram {
    std::array<std::uint64_t, k_buckets.size()> counts{};  // per bucket, not cumulative
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex m_mutex;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> m_requests;
  std::map<std::pair<std::string, std::string>, histogram> m_latency;
};

}  // namespace kernelscan
