#include "engine/device_backend.hpp"

#include <chrono>

namespace kernelscan {

verification_result device_backend::simulate_verification(const job_spec&, const kernel_instance&) {
  verification_result v;
  v.note = "this backend runs the kernel's device code and verifies it for real";
  return v;
}

double device_backend::clock_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::optional<telemetry_reading> device_backend::read_telemetry() {
  return std::nullopt;
}

}  // namespace kernelscan
