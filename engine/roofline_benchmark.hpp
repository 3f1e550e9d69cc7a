#pragma once
// The empirical roofline recipe (DESIGN.md §5), written once for every backend: cold STREAM
// kernels in f32 for bandwidth (the triad at the size below and at a quarter of it, and a copy:
// the best of them); a hot GEMM per floating dtype for compute (the device's GEMM
// library where it has one for that dtype, else the backend's builtin kernel); an FMA kernel for
// the vector f32 peak; i8 scaled from the datasheet by the share of its f16 peak reached (no i8
// GEMM is measured, and the method says so).
//
// Each ceiling is the benchmark's best sample (as STREAM reports its best time): what the device
// can reach, which interference from other work never raises. Each benchmark sizes itself to the
// device: one probe at a small size, then the size at which
// a launch takes about k_roofline_target_ms, capped at the sizes that saturate any current GPU
// (2^28 elements, 8192^3) and at a share of the device's memory. So a GPU runs the big
// problems in milliseconds and a 2-core CPU spends seconds, not minutes.
//
// Threading: the worker's thread.

#include "engine/device_backend.hpp"

namespace kernelscan {

inline constexpr double k_roofline_target_ms = 10;

// Measures the device's ceilings; throws backend_error when a benchmark cannot run at all.
measured_roofline run_roofline_benchmark(device_backend& backend);

// The bandwidth (GB/s) of a cold f32 STREAM triad over about `bytes` (at most the largest triad
// the roofline would run on this device, at least 2^16 elements), its best sample: a point's
// own working set measured again, where a kernel beat the device's measured bandwidth ceiling
// (analysis_context::bandwidth_at). Throws backend_error where it cannot run.
double stream_bandwidth_gbps(device_backend& backend, double bytes);

// The vector f32 peak (TFLOP/s) of the roofline's FMA kernel, its best sample: measured again
// where a point's work alone beat the measured compute ceiling
// (analysis_context::vector_peak_again). Throws backend_error where it cannot run.
double fma_tflops(device_backend& backend);

}  // namespace kernelscan
