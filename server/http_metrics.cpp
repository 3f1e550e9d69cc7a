#include "server/http_metrics.hpp"

#include <cstdio>

namespace kernelscan {

void http_metrics::observe(std::string_view method, std::string_view route, int status,
                           double seconds) {
  std::lock_guard lock(m_mutex);
  ++m_requests[{std::string(method), std::string(route), status}];
  auto& h = m_latency[{std::string(method), std::string(route)}];
  std::size_t i = 0;
  while (i < k_buckets.size() && seconds > k_buckets[i])
    ++i;
  if (i < k_buckets.size()) ++h.counts[i];
  ++h.count;
  h.sum += seconds;
}

std::string http_metrics::exposition() const {
  std::lock_guard lock(m_mutex);
  std::string out;
  char buf[64];
  out +=
      "# HELP kernelscan_http_requests_total HTTP requests answered, by method, route and "
      "status code.\n# TYPE kernelscan_http_requests_total counter\n";
  for (const auto& [key, n] : m_requests) {
    const auto& [method, route, code] = key;
    out += "kernelscan_http_requests_total{method=\"" + method + "\",route=\"" + route +
           "\",code=\"" + std::to_string(code) + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP kernelscan_http_request_duration_seconds Time to handle a request, from "
      "routing to the response (streamed bodies excluded).\n"
      "# TYPE kernelscan_http_request_duration_seconds histogram\n";
  for (const auto& [key, h] : m_latency) {
    const std::string labels = "method=\"" + key.first + "\",route=\"" + key.second + "\"";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < k_buckets.size(); ++i) {
      cumulative += h.counts[i];
      std::snprintf(buf, sizeof buf, "%g", k_buckets[i]);
      out += "kernelscan_http_request_duration_seconds_bucket{" + labels + ",le=\"" + buf + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "kernelscan_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " +
           std::to_string(h.count) + "\n";
    std::snprintf(buf, sizeof buf, "%.9g", h.sum);
    out += "kernelscan_http_request_duration_seconds_sum{" + labels + "} " + buf + "\n";
    out += "kernelscan_http_request_duration_seconds_count{" + labels + "} " +
           std::to_string(h.count) + "\n";
  }
  return out;
}

}  // namespace kernelscan
