#pragma once
// The interface every engine implements: one device, one measurement at a time. Engines run in
// `kernelscan worker` processes, never in the daemon.
//
// Threading: called from the worker's single thread only.

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/device_info.hpp"
#include "engine/job_plan.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

class engine {
 public:
  virtual ~engine() = default;
  virtual const device_info& device() const = 0;
  // Measures point `index` of `plan`. Problems of the point itself (compile errors, out of
  // memory, a failed kernel launch) come back as a failed point_result; only a broken engine
  // throws. `seed` seeds input data and, on the mock, the simulated noise.
  virtual point_result measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) = 0;
  // Every kernel of point `index`: for a job with variants one row per variant, in the spec's
  // order, measured side by side; otherwise measure()'s row alone.
  virtual std::vector<point_result> measure_all(const job_plan& plan, std::uint64_t index,
                                                std::uint64_t seed) {
    return {measure(plan, index, seed)};
  }
  // Measures the device's empirical roofline by micro-benchmarks (DESIGN.md §5) and judges
  // points by it from then on.
  virtual measured_roofline measure_roofline() = 0;
  // Judges points by a roofline measured before (kept by the daemon across restarts).
  virtual void set_roofline(const measured_roofline& roofline) = 0;
  // True once the device is unusable in this process (a kernel faulted and left the GPU context
  // broken): the worker answers the current point, then exits so that the daemon replaces it.
  virtual bool needs_restart() const { return false; }
};

}  // namespace kernelscan
