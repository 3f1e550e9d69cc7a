#pragma once
// The OpenCL backend's own device code (OpenCL C 1.2): seeded input fills, the STREAM ops and
// their reference, the builtin tiled GEMM and the reference GEMM, and the FMA peak kernel. One
// source, built per element type after a prelude of #defines.

#include <string>

#include "engine/dtype.hpp"

namespace kernelscan::opencl {

extern const char* const k_builtin_source;

// The #define lines that specialise k_builtin_source for elements of `t`; `fp64`: the device
// has cl_khr_fp64 (references then compute in double).
std::string element_prelude(dtype t, bool fp64);

}  // namespace kernelscan::opencl
