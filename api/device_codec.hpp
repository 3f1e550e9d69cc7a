#pragma once
// A device's description on the wire: in /api/v1/devices and in the worker's ready message.

#include "api/json.hpp"
#include "engine/device_info.hpp"

namespace kernelscan {

json to_json(const device_info& d);
// Throws std::runtime_error naming the bad field (input comes from a worker process).
device_info device_info_from_json(const json& j);

// What a device computes (fp64, fp16, its GEMMs' dtypes). The reader gives a GPU's, everything,
// for null; it throws json::exception on a missing key.
json to_json(const device_capabilities& c);
device_capabilities device_capabilities_from_json(const json& j);
json to_json(const device_limits& l);
device_limits device_limits_from_json(const json& j);

// Ceilings with the keys of "datasheet" (f16_tflops, bandwidth_gbps, ...). The reader throws
// json::exception on a missing key.
json to_json(const device_peaks& p);
device_peaks device_peaks_from_json(const json& j);
json to_json(const measured_roofline& m);
measured_roofline measured_roofline_from_json(const json& j);

}  // namespace kernelscan
