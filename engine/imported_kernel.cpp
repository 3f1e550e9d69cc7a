#include "engine/imported_kernel.hpp"

#include <numeric>

#include "engine/metrics.hpp"
#include "engine/statistics.hpp"

namespace kernelscan {

imported_kernel with_statistics(imported_kernel k) {
  if (k.samples_us.empty()) return k;
  const time_summary s = summarize(k.samples_us);
  k.stats = {s.mean, s.median, s.min,      s.max,       s.stddev,   s.p5,
             s.p95,  s.p99,    s.ci95_low, s.ci95_high, s.rel_noise};
  k.calls = k.samples_us.size();
  k.total_us = std::accumulate(k.samples_us.begin(), k.samples_us.end(), 0.0);
  return k;
}

point_result imported_point(const imported_kernel& k, std::uint64_t index,
                            std::vector<std::pair<std::string, std::int64_t>> params,
                            const import_target& target, std::string_view format) {
  point_result r;
  r.index = index;
  r.params = std::move(params);
  r.name = k.name;
  r.status = point_status::ok;
  r.verification.note = "imported: measured elsewhere, not verified by kernelscan";
  r.environment.device = target.device_name;

  point_origin o;
  o.format = std::string(format);
  o.type = k.type;
  o.time_us = k.stats;
  o.calls = k.calls;
  o.total_us = k.total_us;
  o.time_pct = k.time_pct;

  const double median = k.stats.median.value_or(0);
  if (k.flops && k.bytes) {
    // Without a device model the peaks are zero: throughput and intensity are still right, and
    // the codec leaves out the roof and the bound, which would be meaningless.
    const device_peaks peaks = target.model ? target.model->peaks : device_peaks{};
    const double latency = target.model ? target.model->launch_latency_us : 0;
    r.metrics = compute_metrics(*k.flops, *k.bytes, target.roof_type, median, peaks, latency);
    o.roofline = target.model != nullptr;
    if (!target.model) {
      o.notes.push_back(
          "no roofline: the device is not a catalog model (name one with \"device\")");
    }
  } else {
    std::string missing = !k.flops && !k.bytes ? "flops or bytes" : !k.flops ? "flops" : "bytes";
    o.notes.push_back("no metrics: the source gives no " + missing +
                      " for this kernel (give them in \"work\")");
  }
  if (!o.time_us.ci95_low) {
    o.notes.push_back(
        k.samples_us.empty()
            ? "no confidence interval: the source gives a summary, not each call's time"
            : "no confidence interval: " + std::to_string(k.samples_us.size()) +
                  " calls are too few for a 95% interval of the median (it takes " +
                  std::to_string(k_ci95_min_samples) + ")");
  }
  r.origin = std::move(o);
  return r;
}

}  // namespace kernelscan
