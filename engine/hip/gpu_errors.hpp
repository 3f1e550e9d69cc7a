#pragma once
// What a HIP or CUDA runtime error means for a measurement, by its number (HIP numbers its errors
// as CUDA does): plain C++, so the table is unit-tested without a GPU runtime.
//
//   device_lost     the runtime documents the context as unusable after it (an illegal
//                   address, a trap or assert, a misaligned access, an invalid PC or address
//                   space, a hardware stack error, a kernel timeout, an uncorrectable ECC or
//                   NVLink error, a contained or external-device error, a destroyed context,
//                   HSA runtime failures on AMD): the worker is replaced
//   out_of_memory   an allocation failed
//   invalid_launch  the device refuses this launch: its configuration, too many resources for
//                   the block size, a cooperative launch or cluster too large
//   unsupported     the build has no code for this device (no kernel image, a PTX or image it
//                   cannot load)
//   internal        anything else
//
// Pure functions; thread-safe.

#include <string>

#include "engine/device_backend.hpp"

namespace kernelscan::gpu {

fault_kind classify_gpu_error(int code);

// A sentence on what to do about the error, for the point's message; "" when there is nothing
// to add to the runtime's own words.
std::string gpu_error_hint(int code);

}  // namespace kernelscan::gpu
