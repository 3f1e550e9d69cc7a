#pragma once
// A job_spec compiled for execution: its expressions parsed once, so that any sweep point can be
// resolved into a kernel_instance by index. The daemon builds one to validate a submission
// (every point is resolved before the job is accepted) and to name points; a worker builds one
// to measure them.
//
// A custom kernel's `-DNAME=VALUE` compile option whose VALUE is a sweep parameter's name is
// given that parameter's value at each point (the classic way to sweep a tile size): the
// kernel instances of such points point to a copy of the kernel with the options substituted.
//
// Not thread-safe (expressions evaluate in place); build one per thread. Owns its job_spec and
// the substituted kernels; kernel instances it returns point into them and must not outlive the
// plan.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/job_spec.hpp"
#include "engine/kernel_instance.hpp"

namespace kernelscan {

// Bounds on what one point may ask for; the daemon's configuration sets them.
struct plan_limits {
  std::int64_t max_dimension = 2147483647;      // gemm m/n/k, stream n, buffer counts
  std::uint64_t max_point_bytes = 64ull << 30;  // device memory one point may allocate
  std::int64_t max_threads_per_block = 1024;
  std::int64_t max_shared_bytes = 256 * 1024;
};

// Fields of the spec that cannot be compiled or evaluated: for each its JSON path
// ("kernel.grid[0]") and why, naming the point when the failure is per point. field() and
// reason() are the first; problems() all, in the order of the spec.
class plan_error : public std::runtime_error {
 public:
  struct problem {
    std::string field;
    std::string reason;
  };
  plan_error(std::string field, std::string reason);
  // Precondition: at least one problem.
  explicit plan_error(std::vector<problem> problems);
  const std::string& field() const { return m_problems.front().field; }
  const std::string& reason() const { return m_problems.front().reason; }
  const std::vector<problem>& problems() const { return m_problems; }

 private:
  std::vector<problem> m_problems;
};

class job_plan {
 public:
  // Throws plan_error listing every expression that does not compile.
  job_plan(job_spec spec, plan_limits limits);
  job_plan(job_plan&&) noexcept;
  job_plan& operator=(job_plan&&) noexcept;
  ~job_plan();

  const job_spec& spec() const;
  std::uint64_t size() const;

  // The kernel at point `index` (with variants, the first variant's); throws plan_error if a field
  // evaluates to an invalid value there (not an integer, not positive, over a limit). Precondition:
  // index < size().
  kernel_instance resolve(std::uint64_t index) const;
  // The job's fitness baseline at point `index` (its expressions see the same sweep
  // parameters), nullopt when the job has none; throws plan_error like resolve().
  std::optional<kernel_instance> resolve_baseline(std::uint64_t index) const;
  // Variants (job_spec::variants): how many (0 for a job without), the kernels measured at each
  // point (the variants, or the one kernel), and the index of the baseline variant, if named.
  std::size_t variant_count() const;
  std::size_t kernels_per_point() const;
  std::optional<std::size_t> baseline_variant() const;
  // Variant `variant`'s kernel at point `index`; throws plan_error like resolve() (fields named
  // variants[1].block). Precondition: variant < variant_count().
  kernel_instance resolve_variant(std::size_t variant, std::uint64_t index) const;
  // Whether every point compiles the same code: a custom kernel without variants whose compile
  // options (and its reference's and a custom baseline's) take no sweep parameter. Then a kernel
  // that does not compile at one point compiles at none.
  bool compiles_alike() const;
  // Throws plan_error when the buffers of all the variants of point `index` together exceed the
  // point's memory limit (they are on the device at once).
  void check_variants_fit(std::uint64_t index) const;
  // Resolves every point; throws a plan_error listing every field that is invalid at some point
  // (each with the first point where it is). Cost: size() resolutions.
  void validate_all() const;

  // The sweep parameters of point `index`, in sweep order.
  std::vector<std::pair<std::string, std::int64_t>> params(std::uint64_t index) const;
  // "point 3 (M=1024, N=7)", for error messages.
  std::string describe_point(std::uint64_t index) const;

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace kernelscan
