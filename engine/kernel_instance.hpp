#pragma once
// A kernel at one sweep point: every expression of its kernel_spec evaluated to a number.
// This is what engines measure. A custom kernel instance points into the job_spec it came from
// (source text is not copied per point), so it must not outlive that spec's job_plan.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/kernel_spec.hpp"

namespace kernelscan {

struct gemm_instance {
  std::int64_t m = 0, n = 0, k = 0;
  dtype type = dtype::f32;
  layout layout_a = layout::row, layout_b = layout::row;
  double alpha = 1.0, beta = 0.0;
  gemm_impl impl = gemm_impl::library;
  std::string bind_a, bind_b, bind_c;
};

struct stream_instance {
  stream_variant variant = stream_variant::triad;
  std::int64_t n = 0;
  dtype type = dtype::f32;
  double scalar = 3.0;
  std::string bind_a, bind_b, bind_c;
};

struct arg_instance {
  std::string name;
  dtype type = dtype::f32;
  bool pointer = false;
  std::int64_t count = 0;
  arg_init init = arg_init::none;
  bool output = false;
  double value = 0;      // scalars
  bool local = false;    // work-group local memory of `count` elements (kernel_arg::local)
  bool scratch = false;  // a workspace the kernel may write (kernel_arg::scratch)
  // Device memory the argument takes: its buffer's size, 0 for scalars and local memory.
  std::uint64_t bytes() const {
    return pointer && !local ? std::uint64_t(count) * size_of(type) : 0;
  }
};

struct custom_launch {
  const custom_kernel* kernel = nullptr;  // source, entry, options
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::int64_t shared_bytes = 0;
};

using reference_instance = std::variant<gemm_instance, stream_instance, custom_launch>;

struct custom_instance {
  custom_launch launch;
  std::vector<arg_instance> args;
  std::optional<double> flops;
  std::optional<double> bytes;
  std::optional<reference_instance> reference;
};

using kernel_instance = std::variant<gemm_instance, stream_instance, custom_instance>;

// Work per launch: floating-point operations and the DRAM bytes an ideal kernel moves (each
// operand read once, each result written once). Custom kernels report what the user declared,
// else the sum of their buffers.
double workload_flops(const kernel_instance& k);
double workload_bytes(const kernel_instance& k);
// Bytes of device memory a point allocates (inputs, outputs, reference outputs). A double so
// that limit checks on absurd sizes cannot overflow.
double footprint_bytes(const kernel_instance& k);

}  // namespace kernelscan
