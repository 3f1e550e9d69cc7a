#pragma once
// Whether a test whose device is missing must fail rather than skip: where the environment says
// that device is there (KERNELSCAN_REQUIRE_OPENCL=1 in CI, where PoCL is installed;
// KERNELSCAN_REQUIRE_GPU=1 on a GPU machine), a test that finds none has found a fault.
// Header-only.

#include <cstdlib>
#include <string>

namespace kernelscan::testing {

// `variable` (KERNELSCAN_REQUIRE_OPENCL, KERNELSCAN_REQUIRE_GPU) is "1".
inline bool device_required(const char* variable) {
  const char* value = std::getenv(variable);
  return value && std::string(value) == "1";
}

}  // namespace kernelscan::testing
