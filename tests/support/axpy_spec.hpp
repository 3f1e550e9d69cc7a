#pragma once
// The custom kernel several tests and benchmarks measure, in OpenCL and in HIP: axpy over N
// elements, out[i] = a[i] + 3·b[i], checked against a STREAM triad reference, with its flops and
// bytes. Header-only.

#include <string>

#include "api/json.hpp"

namespace kernelscan::testing {

// The job's "kernel" object with its source left out, in either engine's launch terms.
inline json axpy_kernel_without_source(const std::string& language) {
  json kernel = json::parse(R"js({
    "op": "custom", "entry": "axpy",
    "block": [256, 1, 1], "grid": ["ceil(N/256)", 1, 1],
    "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
             {"name": "a", "type": "f32*", "count": "N"},
             {"name": "b", "type": "f32*", "count": "N"},
             {"name": "s", "type": "f32", "value": 3},
             {"name": "n", "type": "i32", "value": "N"}],
    "flops": "2*N", "bytes": "12*N",
    "reference": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32", "scalar": 3,
                  "a": "out", "b": "a", "c": "b"}})js");
  kernel["language"] = language;
  return kernel;
}

// The job's "kernel" object; `statement` is the kernel's body for work-item i (`int i`, `n`
// elements), the honest one by default.
inline json opencl_axpy_kernel(
    const std::string& statement = "if (i < n) out[i] = a[i] + s * b[i];") {
  json kernel = axpy_kernel_without_source("opencl");
  kernel["source"] =
      "__kernel void axpy(__global float* out, __global const float* a, __global const float* b, "
      "float s, int n) { int i = get_global_id(0); " +
      statement + " }";
  return kernel;
}

// The same kernel in HIP, for the GPU engine.
inline json hip_axpy_kernel(const std::string& statement = "if (i < n) out[i] = a[i] + s * b[i];") {
  json kernel = axpy_kernel_without_source("hip");
  kernel["source"] =
      "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void axpy(float* out, const float* a, "
      "const float* b, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; " +
      statement + " }";
  return kernel;
}

}  // namespace kernelscan::testing
