#pragma once
// What to measure: a built-in op (gemm, stream) or a user kernel compiled at run time, as the
// user wrote it. Integer fields may be expressions over sweep parameters; `job_plan` resolves
// them per point into the concrete kernels of kernel_instance.hpp.
//
// Plain values; thread-safe for concurrent reads.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/dtype.hpp"

namespace kernelscan {

// An integer given as a literal or as an expression text over sweep parameters.
struct int_expr {
  std::string text;                     // the expression, or the literal's decimal digits
  std::optional<std::int64_t> literal;  // set when the user gave a JSON integer
  static int_expr of(std::int64_t v) { return {std::to_string(v), v}; }
  bool operator==(const int_expr&) const = default;
};

// A real number given as a literal or an expression (flops and bytes counts).
struct num_expr {
  std::string text;
  std::optional<double> literal;
  bool operator==(const num_expr&) const = default;
};

enum class layout { row, col };
enum class gemm_impl { library, builtin };
enum class stream_variant { copy, scale, add, triad };

// C = alpha * op(A) * op(B) + beta * C with A m×k, B k×n, C m×n.
struct gemm_spec {
  int_expr m, n, k;
  dtype type = dtype::f32;
  layout layout_a = layout::row;
  layout layout_b = layout::row;
  double alpha = 1.0;
  double beta = 0.0;
  gemm_impl impl = gemm_impl::library;
  // Only when the gemm is a custom kernel's reference: the argument names bound to A, B and C.
  std::string bind_a, bind_b, bind_c;
  bool operator==(const gemm_spec&) const = default;
};

// STREAM kernels over n elements: copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c.
struct stream_spec {
  stream_variant variant = stream_variant::triad;
  int_expr n;
  dtype type = dtype::f32;
  double scalar = 3.0;
  std::string bind_a, bind_b, bind_c;  // as in gemm_spec
  bool operator==(const stream_spec&) const = default;
};

enum class arg_init { none, random, zeros, ones, arange };

// One argument of a user kernel: a device buffer (`pointer`) of `count` elements or a scalar.
struct kernel_arg {
  std::string name;
  dtype type = dtype::f32;
  bool pointer = false;
  int_expr count;                  // buffers only
  arg_init init = arg_init::none;  // buffers: none means random for inputs, NaN for outputs
  bool output = false;             // buffers only: compared against the reference
  num_expr value;                  // scalars only
  // A pointer to `count` elements of work-group local memory (OpenCL's __local), reserved per
  // work-group at launch: neither input nor output, no device buffer.
  bool local = false;
  // A buffer the kernel may write that is neither an input nor an output (a workspace): not
  // checked for changes as inputs are, not compared; it starts as the unwritten pattern.
  bool scratch = false;
  bool operator==(const kernel_arg&) const = default;
};

// The language of a user kernel's device code. hip: HIP, compiled by hipRTC on AMD GPUs and by
// NVRTC on NVIDIA GPUs (engine/hip/rtc.hip maps the HIP names). cuda: CUDA C++, compiled by NVRTC,
// so NVIDIA GPUs only. opencl: OpenCL C, built by the OpenCL driver of an OpenCL device
// (language_support.hpp).
enum class kernel_language { hip, cuda, opencl };

// The device code of a user kernel and how to launch it.
struct custom_kernel {
  kernel_language language = kernel_language::hip;
  std::string source;
  std::string entry;
  std::array<int_expr, 3> block;
  std::array<int_expr, 3> grid;
  int_expr shared_bytes = int_expr::of(0);
  std::vector<std::string> compile_options;
  bool operator==(const custom_kernel&) const = default;
};

// The reference a custom kernel's outputs are checked against: a built-in op bound to argument
// names, or another user kernel taking the same arguments.
using reference_spec = std::variant<gemm_spec, stream_spec, custom_kernel>;

struct custom_spec {
  custom_kernel kernel;
  std::vector<kernel_arg> args;
  std::optional<num_expr> flops;  // work per launch, for throughput and the roofline
  std::optional<num_expr> bytes;  // DRAM traffic per launch
  std::optional<reference_spec> reference;
  bool operator==(const custom_spec&) const = default;
};

using kernel_spec = std::variant<gemm_spec, stream_spec, custom_spec>;

std::string_view op_name(const kernel_spec& k);
std::string_view to_string(layout l);
std::string_view to_string(gemm_impl i);
std::string_view to_string(stream_variant v);
std::string_view to_string(arg_init i);
std::string_view to_string(kernel_language l);

// What decides a user kernel's compilation, as one string that tells any two apart: language,
// entry, compile options and source. Keys the backends' caches of compiled (and failed) kernels.
std::string compile_key(const custom_kernel& k);

}  // namespace kernelscan
