#pragma once
// Elements of every dtype as a device stores them, read and written on the host: the output
// comparison decodes them, scalar kernel arguments and host-side fills encode them. f16 is IEEE
// binary16 and bf16 the upper half of an f32, both rounded to nearest even; integers take a
// double as a C cast does (toward zero). Pure functions; thread-safe.

#include <bit>
#include <cstdint>

#include "engine/dtype.hpp"

namespace kernelscan {

// Before a run every output holds an `unwritten` pattern: a quiet NaN for floating types, a byte
// repeated for integers. There are two, so that a kernel cannot learn the one to look for:
// pattern 0 (a positive quiet NaN, 0xa5 bytes) and pattern 1 (a negative NaN with a payload,
// 0x5a bytes). Any NaN counts as unwritten.
inline constexpr unsigned char k_unwritten_byte = 0xa5;
inline constexpr unsigned char k_unwritten_byte_alt = 0x5a;

double decode_f16(std::uint16_t bits);
// A bf16 is the top half of an f32. Inline, so that a loop of it vectorises.
inline double decode_bf16(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}
// decode_f16 without a branch or a table, so that a loop of it vectorises: the magnitude's bits
// moved into an f32's and scaled by 2^112 (exact, subnormals included), infinities and NaN given
// an f32's all-ones exponent, then the sign.
inline float f16_to_float(std::uint16_t bits) {
  const std::uint32_t magnitude = std::uint32_t(bits & 0x7fffu) << 13;
  const std::uint32_t finite =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(magnitude) * 0x1p112f);
  const std::uint32_t value = magnitude >= (0x7c00u << 13) ? (magnitude | 0x7f800000u) : finite;
  return std::bit_cast<float>(value | std::uint32_t(bits & 0x8000u) << 16);
}
std::uint16_t encode_f16(float v);
std::uint16_t encode_bf16(float v);

// size_of(t) bytes at `src` as a double.
double load_element(dtype t, const void* src);
// size_of(t) bytes at `src` as the integer they hold (exactly, an i64 too); 0 for a floating type.
std::int64_t load_integer(dtype t, const void* src);
// `v` in the device representation of `t`, size_of(t) bytes at `dst`.
void store_element(dtype t, double v, void* dst);
// Unwritten pattern `pattern` (0 or 1) of `t`, size_of(t) bytes at `dst`.
void store_unwritten(dtype t, void* dst, int pattern = 0);
// Unwritten pattern `pattern` of an integer type as the integer it is (load_integer()); 0 for a
// floating type. The device screens compare integer elements with it.
std::int64_t unwritten_integer(dtype t, int pattern);
// Whether `src` holds unwritten pattern `pattern` (any NaN, for floating types).
bool holds_unwritten(dtype t, const void* src, int pattern = 0);

}  // namespace kernelscan
