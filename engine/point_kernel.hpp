#pragma once
// A kernel at one point made ready on a backend: its device buffers (named, typed, with how each
// is initialised and which are outputs), its compiled user kernels, and how its launch and its
// reference's launch bind to the buffers. Built by the point runner; the same for every backend.
//
// Buffers: a GEMM's A, B, C; the arrays a STREAM variant uses (copy a, c; scale b, c; add and
// triad a, b, c); a user kernel's buffer arguments in parameter order. A reference bound to
// argument names (a built-in op checking a user kernel) finds its operands among them.
//
// Not thread-safe; owned by one measurement. Points into the kernel_instance it was made from,
// which must outlive it.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_backend.hpp"

namespace kernelscan {

// Every buffer is allocated guarded (device_backend::allocate_guarded) by this much on each side:
// the canary regions before and after it, which the runner fills after allocating and checks after
// the kernel's launches (a write before the start or past the end of a buffer,
// out_of_bounds_write). Element counts, bytes() and launches see only the elements. 64 KiB: a
// whole row too many of a matrix up to 16384 f32 wide lands in it; the canaries cost two
// 64 KiB copies per buffer when armed and when checked.
inline constexpr std::uint64_t k_canary_bytes = 64 * 1024;

struct point_buffer {
  std::string name;
  dtype type = dtype::f32;
  std::int64_t count = 0;
  arg_init init = arg_init::none;  // none: random for inputs, the unwritten pattern for outputs
  bool output = false;
  bool scratch = false;  // written by the kernel, neither input nor output (kernel_arg::scratch)
  device_buffer mem;
  std::uint64_t bytes() const { return std::uint64_t(count) * size_of(type); }
};

// One buffer per point_buffer, in order: the kernel's own, or a set with its outputs replaced.
using buffer_set = std::vector<const device_buffer*>;

class point_kernel {
 public:
  // Allocates the buffers (throws backend_error out_of_memory), compiles user kernels and their
  // reference (compile_error); a reference bound to names that do not fit the buffers throws
  // std::invalid_argument naming the argument.
  point_kernel(device_backend& backend, const kernel_instance& instance);
  // It keeps a pointer to the instance: a temporary would dangle.
  point_kernel(device_backend& backend, kernel_instance&& instance) = delete;

  const kernel_instance& instance() const { return *m_instance; }
  std::vector<point_buffer>& buffers() { return m_buffers; }
  const std::vector<point_buffer>& buffers() const { return m_buffers; }
  // The type outputs are compared in (tolerances and flags go by it).
  dtype out_type() const { return m_out_type; }
  bool has_reference() const { return m_has_reference; }
  // What the reference computes, as text: the buffers in order (name, type, count, init, role)
  // and the reference with every value it is launched with. Two kernels with the same key get
  // the same answer from the same inputs (the variants of a point share it). "" without one.
  std::string reference_key() const;

  // The kernel's own buffers.
  buffer_set own_buffers() const;

  // Enqueues one launch of the kernel on `buffers`.
  void launch(const buffer_set& buffers);
  // A user kernel is loaded again, as a module of its own whose globals hold their initial
  // values (device_backend::compile_fresh); later launches use it. Built-in ops have no state.
  void load_fresh();
  // A user kernel's registers, shared and local memory and occupancy at its launch, as the
  // backend reports them (device_backend::resources); nullopt for built-in ops. Asked once the
  // kernel has run with the point's arguments.
  std::optional<kernel_resources> resources() const;
  // Enqueues one launch of the reference on `buffers`. Precondition: has_reference().
  void launch_reference(const buffer_set& buffers);

 private:
  void add_buffer(std::string name, dtype t, std::int64_t count, arg_init init, bool output,
                  bool scratch = false);
  std::size_t bound(const std::string& name, dtype t, std::int64_t count, const char* role) const;
  const std::vector<launch_argument>& arguments(const buffer_set& buffers);

  device_backend& m_backend;
  const kernel_instance* m_instance;
  std::vector<point_buffer> m_buffers;
  dtype m_out_type = dtype::f32;
  bool m_has_reference = false;
  // Buffer index of each operand of a built-in op (the kernel's, or a reference bound to
  // names); -1 where the op does not use it.
  std::array<int, 3> m_operands{-1, -1, -1};
  std::array<int, 3> m_reference_operands{-1, -1, -1};
  kernel_id m_function = 0;
  kernel_id m_reference_function = 0;
  std::vector<launch_argument> m_args;  // reused across launches
};

// "1.50 GiB", for messages about memory.
std::string gib(double bytes);

// Packs a scalar argument's value as the device stores its type.
launch_argument scalar_argument(dtype t, double value);

}  // namespace kernelscan
