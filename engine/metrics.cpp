#include "engine/metrics.hpp"

#include <algorithm>

#include "engine/units.hpp"

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
                              double launch_latency_us, std::string_view roof_source) {
  return compute_metrics(workload_flops(k), workload_bytes(k), roof_dtype(k), median_us, peaks,
                         launch_latency_us, roof_source);
}

point_metrics compute_metrics(double flops, double bytes, dtype roof_type, double median_us,
                              const device_peaks& peaks, double launch_latency_us,
                              std::string_view roof_source) {
  using namespace units;
  const units::flops work = flop * flops;
  const units::bytes traffic = byte * bytes;
  const flop_rate peak = tflops(peaks.tflops_for(roof_type));
  const byte_rate bandwidth = gbps(peaks.bandwidth_gbps);

  point_metrics m;
  m.flops = flops;
  m.bytes = bytes;
  m.roof_source = std::string(roof_source);
  const flop_rate achieved = median_us > 0 ? work / microseconds(median_us) : flop_rate{};
  const byte_rate moved = median_us > 0 ? traffic / microseconds(median_us) : byte_rate{};
  m.tflops = achieved.in(tflop_per_s);
  m.gbps = moved.in(gb_per_s);
  const intensity ai = bytes > 0 ? work / traffic : intensity{};
  m.arithmetic_intensity = ai.in(flop_per_byte);
  const flop_rate roof = bytes > 0 ? std::min(peak, ai * bandwidth) : peak;
  m.roof_tflops = roof.in(tflop_per_s);

  const seconds t_compute = peak > flop_rate{} ? work / peak : seconds{};
  const seconds t_memory = bandwidth > byte_rate{} ? traffic / bandwidth : seconds{};
  if (std::max(t_compute, t_memory) < microseconds(launch_latency_us) &&
      median_us <= k_latency_bound_launches * launch_latency_us) {
    m.bound = "latency";
  } else {
    m.bound = t_memory >= t_compute ? "memory" : "compute";
  }
  // Percent of the ceiling that binds: compute throughput against the roof, or for a kernel with
  // no flops (a copy), bandwidth against the bandwidth peak.
  if (flops > 0 && roof > flop_rate{}) {
    m.roof_pct = 100.0 * (achieved / roof);
  } else if (bandwidth > byte_rate{}) {
    m.roof_pct = 100.0 * (moved / bandwidth);
  }
  return m;
}

double physical_floor_us(double flops, double bytes, dtype roof_type, const device_peaks& peaks,
                         bool count_bytes) {
  using namespace units;
  const flop_rate peak = tflops(peaks.tflops_for(roof_type));
  const byte_rate bandwidth = gbps(peaks.bandwidth_gbps);
  seconds floor;
  if (flops > 0 && peak > flop_rate{}) floor = flop * flops / peak;
  if (count_bytes && bytes > 0 && bandwidth > byte_rate{}) {
    floor = std::max(floor, byte * bytes / bandwidth);
  }
  return floor.in(microsecond);
}

}  // namespace kernelscan
