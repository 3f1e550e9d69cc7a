#include "engine/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kernelscan {

namespace {

// The comparison of one dtype: `Raw` is how the device stores an element, `decode` its value as a
// double. Inlined per type and summed in locals, so that a large output is compared at the speed
// it is read back (a call per element and stores through `e` cost several times more).
template <typename Raw, typename Decode>
void compare_typed(const unsigned char* o, const unsigned char* r, std::int64_t n,
                   std::uint64_t offset, double atol, double rtol, output_errors& e, bool floating,
                   Raw unwritten, Decode decode) {
  const double floor = rtol > 0 ? atol / rtol : 0;
  double max_abs = e.max_abs, max_rel = e.max_rel, sum_sq_diff = 0, sum_sq_ref = 0;
  std::uint64_t near_zero = 0, unwritten_count = 0, wrong = 0;
  std::uint64_t first_wrong = e.first_wrong;
  for (std::int64_t i = 0; i < n; ++i, o += sizeof(Raw), r += sizeof(Raw)) {
    Raw ro, rr;
    std::memcpy(&ro, o, sizeof ro);
    std::memcpy(&rr, r, sizeof rr);
    const double ov = decode(ro), rv = decode(rr);
    if (std::fabs(rv) <= atol) ++near_zero;
    // Any NaN is unwritten for floating types; the pattern's bytes for integers.
    const bool o_unwritten = floating ? std::isnan(ov) : ro == unwritten;
    const bool r_unwritten = floating ? std::isnan(rv) : rr == unwritten;
    bool bad = false;
    if (o_unwritten && !r_unwritten) {
      ++unwritten_count;
      bad = true;
    } else if (ov == rv || (std::isnan(ov) && std::isnan(rv))) {
      bad = false;  // equal, infinities included; or NaN where the reference has NaN
    } else if (!std::isfinite(ov) || !std::isfinite(rv)) {
      bad = true;
      max_abs = max_rel = std::numeric_limits<double>::infinity();
    } else {
      const double d = std::fabs(ov - rv);
      sum_sq_diff += d * d;
      max_abs = std::max(max_abs, d);
      const double denom = std::fabs(rv) + floor;
      if (denom > 0) max_rel = std::max(max_rel, d / denom);
      bad = !(d <= atol + rtol * std::fabs(rv));
    }
    if (std::isfinite(rv)) sum_sq_ref += rv * rv;
    if (bad) {
      ++wrong;
      first_wrong = std::min(first_wrong, offset + std::uint64_t(i));
    }
  }
  e.compared += std::uint64_t(std::max<std::int64_t>(n, 0));
  e.ref_near_zero += near_zero;
  e.unwritten += unwritten_count;
  e.wrong += wrong;
  e.first_wrong = first_wrong;
  e.max_abs = max_abs;
  e.max_rel = max_rel;
  e.sum_sq_diff += sum_sq_diff;
  e.sum_sq_ref += sum_sq_ref;
}

// The unwritten pattern of `t` as its stored type.
template <typename Raw>
Raw unwritten_raw(dtype t, int pattern) {
  unsigned char bytes[sizeof(Raw)];
  store_unwritten(t, bytes, pattern);
  Raw v;
  std::memcpy(&v, bytes, sizeof v);
  return v;
}

template <typename Raw>
auto as_double = [](Raw v) { return double(v); };

}  // namespace

void compare_outputs(dtype t, const void* out, const void* ref, std::int64_t n,
                     std::uint64_t offset, double atol, double rtol, output_errors& e,
                     int pattern) {
  const auto* o = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(ref);
  auto run = [&]<typename Raw>(Raw unwritten, auto decode) {
    compare_typed<Raw>(o, r, n, offset, atol, rtol, e, is_floating(t), unwritten, decode);
  };
  switch (t) {
    case dtype::f64:
      return run(unwritten_raw<double>(t, pattern), as_double<double>);
    case dtype::f32:
      return run(unwritten_raw<float>(t, pattern), as_double<float>);
    case dtype::f16:
      return run(unwritten_raw<std::uint16_t>(t, pattern), decode_f16);
    case dtype::bf16:
      return run(unwritten_raw<std::uint16_t>(t, pattern), decode_bf16);
    case dtype::i64:
      return run(unwritten_raw<std::int64_t>(t, pattern), as_double<std::int64_t>);
    case dtype::i32:
      return run(unwritten_raw<std::int32_t>(t, pattern), as_double<std::int32_t>);
    case dtype::u32:
      return run(unwritten_raw<std::uint32_t>(t, pattern), as_double<std::uint32_t>);
    case dtype::i8:
      return run(unwritten_raw<std::int8_t>(t, pattern), as_double<std::int8_t>);
    case dtype::u8:
      return run(unwritten_raw<std::uint8_t>(t, pattern), as_double<std::uint8_t>);
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
