#pragma once
// A device as a worker discovered it. Plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_catalog.hpp"
#include "engine/dtype.hpp"
#include "engine/job_spec.hpp"

namespace kernelscan {

// A device's empirical roofline (DESIGN.md §5): the ceilings its micro-benchmarks reached.
struct measured_roofline {
  device_peaks peaks;
  std::int64_t measured_ms = 0;  // Unix epoch milliseconds
  std::string method;            // how: the benchmarks run, or "simulated" on the mock
};

// What a device computes beyond its engine and kernel languages (device_needs.hpp matches jobs
// to it). The defaults are a GPU's: everything.
struct device_capabilities {
  bool fp64 = true;  // f64 arithmetic in the built-in ops and buffer fills (OpenCL: cl_khr_fp64)
  bool fp16 = true;  // half arithmetic in kernels (OpenCL: cl_khr_fp16); for the reader only
  std::string gemm_library;  // behind impl "library": "CLBlast", "cuBLAS", ...; empty: none
  std::vector<dtype> gemm_library_types{dtype::f64, dtype::f32, dtype::f16, dtype::bf16};
  std::vector<dtype> gemm_builtin_types{dtype::f64, dtype::f32, dtype::f16, dtype::bf16};
  bool operator==(const device_capabilities&) const = default;
};

// What a block (work-group) may have and what one compute unit (SM, CU) holds, as the platform
// reports them; 0 where it says nothing (the mock; OpenCL tells a work-group's limits only). A
// user kernel's resources (point_result.hpp) are read against them.
struct device_limits {
  std::int64_t block_threads = 0;
  std::uint64_t block_shared_bytes = 0;  // the most a block may ask for (CUDA: opting in)
  int warp_size = 0;
  int unit_threads = 0;
  int unit_registers = 0;
  std::uint64_t unit_shared_bytes = 0;
  bool operator==(const device_limits&) const = default;
};

struct device_info {
  int index = 0;
  engine_kind engine = engine_kind::mock;  // mock, hip or opencl
  std::string type = "gpu";                // gpu, cpu or accelerator (as the platform says)
  std::string vendor;
  std::string name;
  std::string arch;
  std::string model;  // catalog key, empty when the part is not in the catalog
  int compute_units = 0;
  double clock_mhz = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t llc_bytes = 0;
  // The caches of the device's cores together, where they are nearer than L2 and the last-level
  // cache and hold less: a CPU device's per-core L2s (l2_bytes is its shared L3). 0 on a GPU.
  std::uint64_t core_caches_bytes = 0;
  std::string driver;
  std::string pci_bus_id;  // "0000:41:00.0" where the platform tells; a GPU is served once by it
  device_capabilities capabilities;
  device_limits limits;
  std::optional<device_peaks> datasheet;
  std::optional<measured_roofline> measured;
};

}  // namespace kernelscan
