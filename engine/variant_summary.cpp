#include "engine/variant_summary.hpp"

#include <cmath>
#include <map>
#include <set>

namespace kernelscan {

variant_summary summarize_variants(std::span<const variant_row> rows,
                                   const std::vector<std::string>& names,
                                   const std::optional<std::string>& baseline) {
  variant_summary out;
  out.baseline = baseline;
  out.over_baseline = baseline.has_value();
  std::map<std::string, std::size_t> at;
  for (const auto& n : names) {
    at[n] = out.variants.size();
    out.variants.push_back({n, 0, 0, std::nullopt});
  }
  std::vector<double> log_sum(names.size(), 0);
  std::vector<std::size_t> log_count(names.size(), 0);
  // The points some variant measured, and the fastest sound variant of each.
  std::set<std::uint64_t> measured;
  std::map<std::uint64_t, std::pair<double, std::size_t>> fastest;
  for (const auto& r : rows) {
    const auto it = at.find(r.variant);
    if (it == at.end() || !r.ok || !r.median_us) continue;
    measured.insert(r.point);
    auto& v = out.variants[it->second];
    ++v.ok_points;
    v.voided_points += r.voided ? 1 : 0;
    const auto& s = out.over_baseline ? r.over_baseline : r.over_slowest;
    if (s && *s > 0) {
      log_sum[it->second] += std::log(*s);
      ++log_count[it->second];
    }
    if (r.voided) continue;  // a wrong answer wins nothing, however fast
    auto f = fastest.find(r.point);
    if (f == fastest.end() || *r.median_us < f->second.first) {
      fastest[r.point] = {*r.median_us, it->second};
    }
  }
  out.points = measured.size();
  for (const auto& [point, best] : fastest)
    ++out.variants[best.second].wins;
  double best_mean = 0;
  for (std::size_t i = 0; i < out.variants.size(); ++i) {
    if (log_count[i] == 0) continue;
    const double mean = std::exp(log_sum[i] / double(log_count[i]));
    out.variants[i].geomean_speedup = mean;
    if (out.variants[i].voided_points) continue;
    if (!out.best || mean > best_mean) {
      out.best = out.variants[i].name;
      best_mean = mean;
    }
  }
  return out;
}

}  // namespace kernelscan
