#include "engine/output_check.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace kernelscan {
namespace {

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double value_at(dtype t, const unsigned char* p) {
  switch (t) {
    case dtype::f64:
      return load<double>(p);
    case dtype::f32:
      return load<float>(p);
    case dtype::f16:
      return decode_f16(load<std::uint16_t>(p));
    case dtype::bf16:
      return decode_bf16(load<std::uint16_t>(p));
    case dtype::i64:
      return double(load<std::int64_t>(p));
    case dtype::i32:
      return load<std::int32_t>(p);
    case dtype::u32:
      return load<std::uint32_t>(p);
    case dtype::i8:
      return load<std::int8_t>(p);
    case dtype::u8:
      return load<std::uint8_t>(p);
  }
  return 0;
}

bool holds_unwritten(dtype t, const unsigned char* p, double value) {
  if (is_floating(t)) return std::isnan(value);
  for (std::size_t i = 0; i < size_of(t); ++i) {
    if (p[i] != k_unwritten_byte) return false;
  }
  return true;
}

}  // namespace

double decode_f16(std::uint16_t bits) {
  const int sign = bits >> 15;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double v = 0;
  if (exponent == 0) {
    v = std::ldexp(double(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(double(mantissa | 0x400), exponent - 25);
  }
  return sign ? -v : v;
}

double decode_bf16(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

void compare_outputs(dtype t, const void* out, const void* ref, std::int64_t n,
                     std::uint64_t offset, double atol, double rtol, output_errors& e) {
  const auto* o = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(ref);
  const std::size_t w = size_of(t);
  const double floor = rtol > 0 ? atol / rtol : 0;
  for (std::int64_t i = 0; i < n; ++i, o += w, r += w) {
    const double ov = value_at(t, o), rv = value_at(t, r);
    ++e.compared;
    bool bad = false;
    if (holds_unwritten(t, o, ov) && !holds_unwritten(t, r, rv)) {
      ++e.unwritten;
      bad = true;
    } else if (ov == rv || (std::isnan(ov) && std::isnan(rv))) {
      bad = false;  // equal, infinities included; or NaN where the reference has NaN
    } else if (!std::isfinite(ov) || !std::isfinite(rv)) {
      bad = true;
      e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
    } else {
      const double d = std::fabs(ov - rv);
      e.max_abs = std::max(e.max_abs, d);
      const double denom = std::fabs(rv) + floor;
      if (denom > 0) e.max_rel = std::max(e.max_rel, d / denom);
      bad = !(d <= atol + rtol * std::fabs(rv));
    }
    if (bad) {
      ++e.wrong;
      e.first_wrong = std::min(e.first_wrong, offset + std::uint64_t(i));
    }
  }
}

}  // namespace kernelscan
