#pragma once
// OpenCL status codes as the runner reports them: names for messages, and the fault each means
// where it was returned. The same code can mean two things: CL_OUT_OF_RESOURCES from an enqueue
// is a launch the device refuses (too many registers for the work-group size), from a wait it is
// a kernel that faulted (NVIDIA reports out-of-bounds accesses so), after which the context is
// unusable. Pure functions; thread-safe.

#include <string>

#include "engine/device_backend.hpp"

namespace kernelscan::opencl {

// Where a status came from.
enum class cl_phase {
  allocate,  // clCreateBuffer
  enqueue,   // clEnqueue*, clSetKernelArg: the command was refused
  wait,      // clFinish, clWaitForEvents, a blocking read, an event's execution status
  other,
};

// "CL_OUT_OF_RESOURCES (-5)"; "OpenCL status -1234" for codes it does not know.
std::string cl_status_name(int status);

fault_kind classify_cl_status(int status, cl_phase phase);

// A build log as a user reads it: the temporary file the driver compiled the source from
// (PoCL's ".../kcache/tempfile_XXXXXX.cl", ROCm's ".../CompileSource") is called kernel.cl, so
// that no host path shows and two logs of one mistake read alike; and a hint follows a mistake
// whose fix is a compile option, or half or double arithmetic the device does not have.
std::string readable_build_log(const std::string& log);

// "NVIDIA", "AMD", "Intel", "ARM", ... from CL_DEVICE_VENDOR's spelling; the text itself when it
// is none of those.
std::string normalise_vendor(const std::string& cl_vendor);

}  // namespace kernelscan::opencl
