#pragma once
// The vendor GEMM library behind `impl: library`: cuBLAS on NVIDIA, hipBLAS on AMD when the
// build found it (Debian 12 packages none; a ROCm install has it). Compiled by hipcc or nvcc.
//
// Threading: one per engine, used from the worker's thread.

#include <memory>
#include <string>

#include "engine/hip/kernels.hpp"

namespace kernelscan::gpu {

class gemm_library {
 public:
  // Throws gpu_error if the library is built in but cannot start.
  gemm_library();
  gemm_library(const gemm_library&) = delete;
  gemm_library& operator=(const gemm_library&) = delete;
  ~gemm_library();

  // False when this build has no GEMM library; gemm() then throws std::invalid_argument.
  static bool available();
  static std::string name();  // "cuBLAS 13.0", "hipBLAS", or why there is none
  // Sets the library's stream (and, for cuBLAS, a workspace of its own) once, outside any timed
  // region: a call on another stream binds again.
  void bind(hipStream_t s);
  // C = alpha·A·B + beta·C on `s`, C row-major (see gemm_args).
  void gemm(const gemm_args& g, hipStream_t s);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace kernelscan::gpu
