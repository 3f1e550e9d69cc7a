#pragma once
// A job_spec compiled for execution: its expressions parsed once, so that any sweep point can be
// resolved into a kernel_instance by index. The daemon builds one to validate a submission
// (every point is resolved before the job is accepted) and to name points; a worker builds one
// to measure them.
//
// Not thread-safe (expressions evaluate in place); build one per thread. Owns its job_spec;
// kernel instances it returns point into it and must not outlive the plan.

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

// A field of the spec that cannot be compiled or evaluated. `field` is its JSON path
// ("kernel.grid[0]"); `reason` says why, naming the point when the failure is per point.
class plan_error : public std::runtime_error {
 public:
  plan_error(std::string field, std::string reason);
  const std::string& field() const { return m_field; }
  const std::string& reason() const { return m_reason; }

 private:
  std::string m_field;
  std::string m_reason;
};

class job_plan {
 public:
  // Throws plan_error for an expression that does not compile.
  job_plan(job_spec spec, plan_limits limits);
  job_plan(job_plan&&) noexcept;
  job_plan& operator=(job_plan&&) noexcept;
  ~job_plan();

  const job_spec& spec() const;
  std::uint64_t size() const;

  // The kernel at point `index`; throws plan_error if a field evaluates to an invalid value there
  // (not an integer, not positive, over a limit). Precondition: index < size().
  kernel_instance resolve(std::uint64_t index) const;
  // The job's fitness baseline at point `index` (its expressions see the same sweep
  // parameters), nullopt when the job has none; throws plan_error like resolve().
  std::optional<kernel_instance> resolve_baseline(std::uint64_t index) const;
  // Resolves every point; throws the first plan_error. Cost: size() resolutions.
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
