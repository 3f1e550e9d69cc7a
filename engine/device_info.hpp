#pragma once
// A device as a worker discovered it. Plain value.

#include <cstdint>
#include <optional>
#include <string>

#include "engine/device_catalog.hpp"
#include "engine/job_spec.hpp"

namespace kernelscan {

// A device's empirical roofline (DESIGN.md §5): the ceilings its micro-benchmarks reached.
struct measured_roofline {
  device_peaks peaks;
  std::int64_t measured_ms = 0;  // Unix epoch milliseconds
  std::string method;            // how: the benchmarks run, or "simulated" on the mock
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
  std::string driver;
  std::string pci_bus_id;  // "0000:41:00.0" where the platform tells; a GPU is served once by it
  std::optional<device_peaks> datasheet;
  std::optional<measured_roofline> measured;
};

}  // namespace kernelscan
