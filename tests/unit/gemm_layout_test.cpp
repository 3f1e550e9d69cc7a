// The operand layouts of the GPU engine's GEMMs, checked on the host: the strides its kernels
// index with, and the column-major BLAS call it makes for a row-major C, both against a plain
// row-major product, for every combination of layouts and a non-square shape.
#include "engine/gemm_layout.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kernelscan {
namespace {

constexpr std::int64_t m = 3, n = 5, k = 4;

// A(i, p) = 1 + i + 10p, B(p, j) = 2 - p + 7j: stored in the layout asked for.
std::vector<double> store_a(layout l) {
  std::vector<double> a(m * k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      a[l == layout::row ? i * k + p : i + p * m] = double(1 + i + 10 * p);
  return a;
}
std::vector<double> store_b(layout l) {
  std::vector<double> b(k * n);
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      b[l == layout::row ? p * n + j : p + j * k] = double(2 - p + 7 * j);
  return b;
}
double expected(std::int64_t i, std::int64_t j) {
  double sum = 0;
  for (std::int64_t p = 0; p < k; ++p)
    sum += double(1 + i + 10 * p) * double(2 - p + 7 * j);
  return sum;
}

// A column-major GEMM as BLAS defines it: C(r, c) = sum op(X)(r, d) * op(Y)(d, c), each matrix
// stored column-major with its leading dimension.
std::vector<double> blas(const blas_gemm_call& call, const std::vector<double>& first,
                         const std::vector<double>& second) {
  auto op = [](const std::vector<double>& x, bool t, std::int64_t ld, std::int64_t r,
               std::int64_t c) { return t ? x[c + r * ld] : x[r + c * ld]; };
  std::vector<double> c(call.ld_c * call.cols);
  for (std::int64_t col = 0; col < call.cols; ++col)
    for (std::int64_t row = 0; row < call.rows; ++row) {
      double sum = 0;
      for (std::int64_t d = 0; d < call.depth; ++d)
        sum += op(first, call.transpose_first, call.ld_first, row, d) *
               op(second, call.transpose_second, call.ld_second, d, col);
      c[row + col * call.ld_c] = sum;
    }
  return c;
}

TEST(GemmLayout, KernelStridesIndexEveryLayout) {
  for (layout la : {layout::row, layout::col}) {
    for (layout lb : {layout::row, layout::col}) {
      const auto s = strides_of(m, n, k, la, lb);
      const auto a = store_a(la), b = store_b(lb);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::int64_t p = 0; p < k; ++p)
            sum += a[i * s.a_row + p * s.a_col] * b[p * s.b_row + j * s.b_col];
          EXPECT_EQ(sum, expected(i, j)) << int(la) << int(lb) << " at " << i << "," << j;
        }
    }
  }
}

TEST(GemmLayout, TheColumnMajorCallGivesTheRowMajorProduct) {
  for (layout la : {layout::row, layout::col}) {
    for (layout lb : {layout::row, layout::col}) {
      const auto call = column_major_call(m, n, k, la, lb);
      const auto c = blas(call, store_b(lb), store_a(la));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          EXPECT_EQ(c[i * n + j], expected(i, j)) << int(la) << int(lb) << " at " << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace kernelscan
