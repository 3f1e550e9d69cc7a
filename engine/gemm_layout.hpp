#pragma once
// How a GEMM's operands lie in memory, for the GPU engine's kernels and its BLAS call: plain
// arithmetic, unit-tested against a host product so that the layouts are right before any GPU
// runs them. Pure functions; thread-safe.
//
// C (m×n) is row-major; A (m×k) and B (k×n) are row- or column-major (gemm_spec).

#include <cstdint>

#include "engine/kernel_spec.hpp"

namespace kernelscan {

// Element strides: A(i, p) = a[i*a_row + p*a_col], B(p, j) = b[p*b_row + j*b_col].
struct gemm_strides {
  std::int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;
};
gemm_strides strides_of(std::int64_t m, std::int64_t n, std::int64_t k, layout a, layout b);

// The column-major library call computing row-major C = A·B: row-major C read column-major is
// Cᵀ = Bᵀ·Aᵀ, so the library multiplies B (first) by A (second), rows n, cols m, depth k. A
// row-major operand read column-major is its own transpose: no op, leading dimension its row
// length; a column-major one needs the transpose op.
struct blas_gemm_call {
  bool transpose_first = false;   // the op on B
  bool transpose_second = false;  // the op on A
  std::int64_t rows = 0, cols = 0, depth = 0;
  std::int64_t ld_first = 0, ld_second = 0, ld_c = 0;
};
blas_gemm_call column_major_call(std::int64_t m, std::int64_t n, std::int64_t k, layout a,
                                 layout b);

}  // namespace kernelscan
