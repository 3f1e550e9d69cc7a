#pragma once
// The values buffers are initialised with, defined once: every backend's device fill produces
// exactly these elements (its own kernels compute the same bits), and the host fill here is what
// the tests and backends without fill kernels use.
//
//   random     r = mix64(seed ^ mix64(i)). Signed integers: (r >> 60) − 8; unsigned: r >> 60.
//              Floating types: s·(u − h) with u = (r >> 40)·2^-24 in [0, 1), rounded to the
//              type, where the scale s (1 or 1/2) and the shift h (0, 1/2 or 1) are drawn for
//              each segment of 2^b elements (b from 6 to 12, drawn for the fill): segment j's
//              draw is g = mix64(f ^ j) with f = mix64(seed ^ k_fill_segment_salt), b = 6 +
//              f mod 7, h = (g mod 3)/2, s = 1/2 where (g >> 8) is odd. So an element lies in
//              [0, 1), [−1/2, 1/2), [−1, 0) or half of one, and the mean and the mean square of a
//              row vary from segment to segment and fill to fill: a kernel cannot take a
//              statistic of its inputs for a constant, as it could of one distribution (the mean
//              square of n values uniform on [−1, 1) is 1/3 within about 0.9/√n). Small values
//              keep sums exact or well-conditioned; every step is exact in float (s a power of
//              two, u − h exact), so devices compute the same bits.
//   value      every element `value`, as the type holds it
//   arange     element i holds i
//   unwritten  unwritten pattern `pattern` (0 or 1): NaN, or a byte repeated (element.hpp)
//
// Pure functions; thread-safe.

#include <cstdint>

#include "engine/dtype.hpp"

namespace kernelscan {

// splitmix64's finaliser: seeds of points, trials and buffers are derived with it.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum class fill_kind { random, value, arange, unwritten };

struct fill_request {
  fill_kind kind = fill_kind::random;
  dtype type = dtype::f32;
  std::int64_t count = 0;
  std::uint64_t seed = 0;  // random
  double value = 0;        // value
  int pattern = 0;         // unwritten
};

// Salt of a fill's segment draws (above).
inline constexpr std::uint64_t k_fill_segment_salt = 0x5e6e47ull;

// Element i of a random fill, before it is rounded to the type.
double random_element(dtype t, std::uint64_t seed, std::int64_t i);

// Fills `count` elements at `dst` (size_of(type)·count bytes) as the request says.
void fill_host(const fill_request& f, void* dst);

}  // namespace kernelscan
