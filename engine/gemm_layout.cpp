#include "engine/gemm_layout.hpp"

namespace kernelscan {

gemm_strides strides_of(std::int64_t m, std::int64_t n, std::int64_t k, layout a, layout b) {
  gemm_strides s;
  if (a == layout::row) {
    s.a_row = k;
    s.a_col = 1;
  } else {
    s.a_row = 1;
    s.a_col = m;
  }
  if (b == layout::row) {
    s.b_row = n;
    s.b_col = 1;
  } else {
    s.b_row = 1;
    s.b_col = k;
  }
  return s;
}

blas_gemm_call column_major_call(std::int64_t m, std::int64_t n, std::int64_t k, layout a,
                                 layout b) {
  blas_gemm_call c;
  c.transpose_first = b == layout::col;
  c.ld_first = b == layout::row ? n : k;
  c.transpose_second = a == layout::col;
  c.ld_second = a == layout::row ? k : m;
  c.rows = n;
  c.cols = m;
  c.depth = k;
  c.ld_c = n;
  return c;
}

}  // namespace kernelscan
