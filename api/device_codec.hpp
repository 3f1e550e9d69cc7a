#pragma once
// A device's description on the wire: in /api/v1/devices and in the worker's ready message.

#include "api/json.hpp"
#include "engine/device_info.hpp"

namespace kernelscan {

json to_json(const device_info& d);
// Throws std::runtime_error naming the bad field (input comes from a worker process).
device_info device_info_from_json(const json& j);

}  // namespace kernelscan
