#include "engine/element.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace kernelscan {
namespace {

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(T v, void* p) {
  std::memcpy(p, &v, sizeof v);
}

// A double into an integer type as a C cast does, saturated where the cast would be undefined.
template <typename T>
T to_integer(double v) {
  if (std::isnan(v)) return T(0);
  const double lo = double(std::numeric_limits<T>::min());
  const double hi = double(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return T(v);
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

std::uint16_t encode_f16(float v) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {
    // Subnormal in f16 (below 2^-14): the value in units of 2^-24, rounded to nearest even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: a power of two
    const float r = std::nearbyint(scaled);                        // ties to even by default
    return std::uint16_t(sign | std::uint16_t(r));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t mantissa_odd = (abs >> 13) & 1u;
  const std::uint32_t rounded = abs + 0xfffu + mantissa_odd;
  return std::uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

std::uint16_t encode_bf16(float v) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return std::uint16_t(rounded >> 16);
}

std::int64_t load_integer(dtype t, const void* src) {
  switch (t) {
    case dtype::i64:
      return load<std::int64_t>(src);
    case dtype::i32:
      return load<std::int32_t>(src);
    case dtype::u32:
      return load<std::uint32_t>(src);
    case dtype::i8:
      return load<std::int8_t>(src);
    case dtype::u8:
      return load<std::uint8_t>(src);
    default:
      return 0;
  }
}

double load_element(dtype t, const void* src) {
  switch (t) {
    case dtype::f64:
      return load<double>(src);
    case dtype::f32:
      return load<float>(src);
    case dtype::f16:
      return decode_f16(load<std::uint16_t>(src));
    case dtype::bf16:
      return decode_bf16(load<std::uint16_t>(src));
    default:
      return double(load_integer(t, src));
  }
}

void store_element(dtype t, double v, void* dst) {
  switch (t) {
    case dtype::f64:
      return store(v, dst);
    case dtype::f32:
      return store(float(v), dst);
    case dtype::f16:
      return store(encode_f16(float(v)), dst);
    case dtype::bf16:
      return store(encode_bf16(float(v)), dst);
    case dtype::i64:
      return store(to_integer<std::int64_t>(v), dst);
    case dtype::i32:
      return store(to_integer<std::int32_t>(v), dst);
    case dtype::u32:
      return store(to_integer<std::uint32_t>(v), dst);
    case dtype::i8:
      return store(to_integer<std::int8_t>(v), dst);
    case dtype::u8:
      return store(to_integer<std::uint8_t>(v), dst);
  }
}

void store_unwritten(dtype t, void* dst, int pattern) {
  const bool alt = pattern != 0;
  switch (t) {
    case dtype::f64:
      return store(std::uint64_t(alt ? 0xfff800000000a5a5ull : 0x7ff8000000000000ull), dst);
    case dtype::f32:
      return store(std::uint32_t(alt ? 0xffc0a5a5u : 0x7fc00000u), dst);
    case dtype::f16:
      return store(std::uint16_t(alt ? 0xfe5au : 0x7e00u), dst);
    case dtype::bf16:
      return store(std::uint16_t(alt ? 0xffc5u : 0x7fc0u), dst);
    default:
      std::memset(dst, alt ? k_unwritten_byte_alt : k_unwritten_byte, size_of(t));
  }
}

std::int64_t unwritten_integer(dtype t, int pattern) {
  unsigned char bytes[8] = {};
  store_unwritten(t, bytes, pattern);
  return load_integer(t, bytes);
}

bool holds_unwritten(dtype t, const void* src, int pattern) {
  if (is_floating(t)) return std::isnan(load_element(t, src));
  const unsigned char byte = pattern != 0 ? k_unwritten_byte_alt : k_unwritten_byte;
  const auto* p = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < size_of(t); ++i) {
    if (p[i] != byte) return false;
  }
  return true;
}

}  // namespace kernelscan
