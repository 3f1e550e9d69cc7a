#include "engine/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kernelscan {

void compare_outputs(dtype t, const void* out, const void* ref, std::int64_t n,
                     std::uint64_t offset, double atol, double rtol, output_errors& e,
                     int pattern) {
  const auto* o = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(ref);
  const std::size_t w = size_of(t);
  const double floor = rtol > 0 ? atol / rtol : 0;
  for (std::int64_t i = 0; i < n; ++i, o += w, r += w) {
    const double ov = load_element(t, o), rv = load_element(t, r);
    ++e.compared;
    if (std::fabs(rv) <= atol) ++e.ref_near_zero;
    bool bad = false;
    if (holds_unwritten(t, o, pattern) && !holds_unwritten(t, r, pattern)) {
      ++e.unwritten;
      bad = true;
    } else if (ov == rv || (std::isnan(ov) && std::isnan(rv))) {
      bad = false;  // equal, infinities included; or NaN where the reference has NaN
    } else if (!std::isfinite(ov) || !std::isfinite(rv)) {
      bad = true;
      e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
    } else {
      const double d = std::fabs(ov - rv);
      e.sum_sq_diff += d * d;
      e.max_abs = std::max(e.max_abs, d);
      const double denom = std::fabs(rv) + floor;
      if (denom > 0) e.max_rel = std::max(e.max_rel, d / denom);
      bad = !(d <= atol + rtol * std::fabs(rv));
    }
    if (std::isfinite(rv)) e.sum_sq_ref += rv * rv;
    if (bad) {
      ++e.wrong;
      e.first_wrong = std::min(e.first_wrong, offset + std::uint64_t(i));
    }
  }
}

double norm_relative_error(const output_errors& e) {
  if (e.sum_sq_diff == 0) return 0;
  if (e.sum_sq_ref == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(e.sum_sq_diff / e.sum_sq_ref);
}

double near_zero_share(const output_errors& e) {
  return e.compared ? double(e.ref_near_zero) / double(e.compared) : 0.0;
}

bool fails_norm_test(const output_errors& e, double rtol) {
  return norm_relative_error(e) > rtol;
}

}  // namespace kernelscan
