#include "engine/metrics.hpp"

#include <algorithm>

namespace kernelscan {

dtype roof_dtype(const kernel_instance& k) {
  if (const auto* g = std::get_if<gemm_instance>(&k)) return g->type;
  if (const auto* s = std::get_if<stream_instance>(&k)) return s->type;
  const auto& c = std::get<custom_instance>(k);
  for (const auto& a : c.args) {
    if (a.pointer && a.output && is_floating(a.type)) return a.type;
  }
  return dtype::f32;
}

point_metrics compute_metrics(const kernel_instance& k, double median_us, const device_peaks& peaks,
                              double launch_latency_us) {
  return compute_metrics(workload_flops(k), workload_bytes(k), roof_dtype(k), median_us, peaks,
                         launch_latency_us);
}

point_metrics compute_metrics(double flops, double bytes, dtype roof_type, double median_us,
                              const device_peaks& peaks, double launch_latency_us) {
  point_metrics m;
  m.flops = flops;
  m.bytes = bytes;
  m.roof_source = "datasheet";
  if (median_us > 0) {
    m.tflops = m.flops / (median_us * 1e6);  // flop/us = 1e6 flop/s; / 1e12 for TFLOP/s
    m.gbps = m.bytes / (median_us * 1e3);
  }
  m.arithmetic_intensity = m.bytes > 0 ? m.flops / m.bytes : 0;
  const double peak_tflops = peaks.tflops_for(roof_type);
  const double bw_tbs = peaks.bandwidth_gbps / 1e3;
  m.roof_tflops =
      m.bytes > 0 ? std::min(peak_tflops, m.arithmetic_intensity * bw_tbs) : peak_tflops;

  const double t_compute_us = peak_tflops > 0 ? m.flops / (peak_tflops * 1e6) : 0;
  const double t_memory_us = bw_tbs > 0 ? m.bytes / (bw_tbs * 1e6) : 0;
  if (std::max(t_compute_us, t_memory_us) < launch_latency_us) {
    m.bound = "latency";
  } else {
    m.bound = t_memory_us >= t_compute_us ? "memory" : "compute";
  }
  // Percent of the ceiling that binds: compute throughput against the roof, or for a kernel with
  // no flops (a copy), bandwidth against the bandwidth peak.
  if (m.flops > 0 && m.roof_tflops > 0) {
    m.roof_pct = 100.0 * m.tflops / m.roof_tflops;
  } else if (peaks.bandwidth_gbps > 0) {
    m.roof_pct = 100.0 * m.gbps / peaks.bandwidth_gbps;
  }
  return m;
}

}  // namespace kernelscan
