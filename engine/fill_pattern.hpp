#pragma once
// The values buffers are initialised with, defined once: every backend's device fill produces
// exactly these elements (its own kernels compute the same bits), and the host fill here is what
// the tests and backends without fill kernels use.
//
//   random     r = mix64(seed ^ mix64(i)); floating types: 2u − 1 with u = (r >> 40)·2^-24 in
//              [0, 1), rounded to the type; signed integers: (r >> 60) − 8; unsigned: r >> 60.
//              Small values keep sums exact or well-conditioned.
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

// Element i of a random fill, before it is rounded to the type.
double random_element(dtype t, std::uint64_t seed, std::int64_t i);

// Fills `count` elements at `dst` (size_of(type)·count bytes) as the request says.
void fill_host(const fill_request& f, void* dst);

}  // namespace kernelscan
