#pragma once
// The GPU runtime the HIP engine is written against: HIP itself on AMD (hipcc), or CUDA under the
// HIP names we use (nvcc). Debian 12's HIP headers for NVIDIA do not compile with CUDA 13, so the
// mapping below is ours and covers exactly what engine/hip/ calls; a new HIP call needs a line
// here before it builds for NVIDIA.
//
// Also the element types of kernels (gpu_f16, gpu_bf16) and their float conversions, usable on
// host and device.

#include <type_traits>
#include <utility>

// What the compiler gave a runtime-compiled kernel (gpu_function_attributes_of below).
struct gpu_function_attributes {
  int registers = 0;     // per thread
  int shared_bytes = 0;  // static shared memory per block
  int local_bytes = 0;   // local memory per thread (spills, private arrays)
  int max_threads = 0;   // the most threads a block of it may have
};

#if defined(KERNELSCAN_GPU_CUDA)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#define KERNELSCAN_PLATFORM_NAME "CUDA"

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipDeviceAttribute_t = cudaDeviceAttr;
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
// Runtime-compiled modules go through CUDA's library API, which the runtime loads from the
// driver on demand: the binary does not link libcuda, so it starts on machines without one.
using hipModule_t = cudaLibrary_t;
using hipFunction_t = cudaKernel_t;

inline constexpr hipError_t hipSuccess = cudaSuccess;
inline constexpr hipError_t hipErrorNoDevice = cudaErrorNoDevice;
inline constexpr hipError_t hipErrorInsufficientDriver = cudaErrorInsufficientDriver;
inline constexpr hipError_t hipErrorOutOfMemory = cudaErrorMemoryAllocation;
inline constexpr hipError_t hipErrorNotReady = cudaErrorNotReady;
inline constexpr hipError_t hipErrorIllegalAddress = cudaErrorIllegalAddress;
inline constexpr hipError_t hipErrorLaunchFailure = cudaErrorLaunchFailure;
inline constexpr hipError_t hipErrorLaunchTimeOut = cudaErrorLaunchTimeout;
inline constexpr hipError_t hipErrorAssert = cudaErrorAssert;
inline constexpr hipError_t hipErrorInvalidConfiguration = cudaErrorInvalidConfiguration;
inline constexpr hipError_t hipErrorInvalidValue = cudaErrorInvalidValue;
inline constexpr unsigned hipStreamNonBlocking = cudaStreamNonBlocking;
inline constexpr unsigned hipHostMallocMapped = cudaHostAllocMapped;
inline constexpr unsigned hipHostMallocDefault = cudaHostAllocDefault;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeClockRate = cudaDevAttrClockRate;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMemoryClockRate =
    cudaDevAttrMemoryClockRate;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerBlock =
    cudaDevAttrMaxSharedMemoryPerBlockOptin;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerMultiprocessor =
    cudaDevAttrMaxSharedMemoryPerMultiprocessor;
inline constexpr auto hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr auto hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr auto hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
inline constexpr auto hipStreamCaptureModeThreadLocal = cudaStreamCaptureModeThreadLocal;

#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc cudaHostAlloc
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemGetInfo cudaMemGetInfo
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiate(exec, graph, a, b, c) cudaGraphInstantiate(exec, graph, 0)
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventQuery cudaEventQuery
#define hipEventElapsedTime cudaEventElapsedTime

inline hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  return cudaLibraryLoadData(module, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
}
inline hipError_t hipModuleUnload(hipModule_t module) {
  return cudaLibraryUnload(module);
}
inline hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t module, const char* name) {
  return cudaLibraryGetKernel(f, module, name);
}
// Above 48 KiB of dynamic shared memory CUDA wants the kernel to opt in first; HIP does not.
inline hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        hipStream_t stream, void** args, void** /*extra*/) {
  const void* fn = reinterpret_cast<const void*>(f);
  if (shared > 48u * 1024u) {
    const cudaError_t e =
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (e != cudaSuccess) return e;
  }
  return cudaLaunchKernel(fn, dim3(gx, gy, gz), dim3(bx, by, bz), args, shared, stream);
}

// Library kernels (cudaKernel_t) go to the runtime's function calls as their address.
inline hipError_t gpu_function_attributes_of(hipFunction_t f, gpu_function_attributes& out) {
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(f));
  if (e != cudaSuccess) return e;
  out = {a.numRegs, int(a.sharedSizeBytes), int(a.localSizeBytes), a.maxThreadsPerBlock};
  return cudaSuccess;
}
// Resident blocks of `f` per SM at `threads` a block; over 48 KiB of dynamic shared memory the
// kernel opts in first, as for a launch.
inline hipError_t gpu_occupancy(int* blocks, hipFunction_t f, int threads, size_t shared) {
  const void* fn = reinterpret_cast<const void*>(f);
  if (shared > 48u * 1024u) {
    const cudaError_t e =
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (e != cudaSuccess) return e;
  }
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, fn, threads, shared);
}

using hiprtcResult = nvrtcResult;
using hiprtcProgram = nvrtcProgram;
inline constexpr hiprtcResult HIPRTC_SUCCESS = NVRTC_SUCCESS;
#define hiprtcCreateProgram nvrtcCreateProgram
#define hiprtcDestroyProgram nvrtcDestroyProgram
#define hiprtcCompileProgram nvrtcCompileProgram
#define hiprtcGetProgramLogSize nvrtcGetProgramLogSize
#define hiprtcGetProgramLog nvrtcGetProgramLog
#define hiprtcGetErrorString nvrtcGetErrorString
#define hiprtcAddNameExpression nvrtcAddNameExpression
#define hiprtcGetLoweredName nvrtcGetLoweredName
#define hiprtcVersion nvrtcVersion
// Compiled for a real architecture (-arch=sm_XY), NVRTC's product to load is the cubin.
#define hiprtcGetCodeSize nvrtcGetCUBINSize
#define hiprtcGetCode nvrtcGetCUBIN

using gpu_f16 = __half;
using gpu_bf16 = __nv_bfloat16;
#define KERNELSCAN_F16_TO_FLOAT(x) __half2float(x)
#define KERNELSCAN_BF16_TO_FLOAT(x) __bfloat162float(x)
#define KERNELSCAN_FLOAT_TO_F16(x) __float2half_rn(x)
#define KERNELSCAN_FLOAT_TO_BF16(x) __float2bfloat16_rn(x)

#elif defined(KERNELSCAN_GPU_HIP)

#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#include <hip/hiprtc.h>

#define KERNELSCAN_PLATFORM_NAME "HIP"

inline hipError_t gpu_function_attributes_of(hipFunction_t f, gpu_function_attributes& out) {
  const std::pair<int*, hipFunction_attribute> asked[] = {
      {&out.registers, HIP_FUNC_ATTRIBUTE_NUM_REGS},
      {&out.shared_bytes, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
      {&out.local_bytes, HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
      {&out.max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}};
  for (const auto& [value, attribute] : asked) {
    const hipError_t e = hipFuncGetAttribute(value, attribute, f);
    if (e != hipSuccess) return e;
  }
  return hipSuccess;
}
inline hipError_t gpu_occupancy(int* blocks, hipFunction_t f, int threads, size_t shared) {
  return hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, threads, shared);
}

using gpu_f16 = __half;
using gpu_bf16 = hip_bfloat16;
#define KERNELSCAN_F16_TO_FLOAT(x) __half2float(x)
#define KERNELSCAN_BF16_TO_FLOAT(x) float(x)
#define KERNELSCAN_FLOAT_TO_F16(x) __float2half(x)
#define KERNELSCAN_FLOAT_TO_BF16(x) gpu_bf16(x)

#else
#error "engine/hip/runtime.hpp needs KERNELSCAN_GPU_HIP or KERNELSCAN_GPU_CUDA"
#endif

// Element conversions through float: the half types by the platform's intrinsics, the others
// as plain C++ numbers.
__host__ __device__ inline float to_float(gpu_f16 x) {
  return KERNELSCAN_F16_TO_FLOAT(x);
}
__host__ __device__ inline float to_float(gpu_bf16 x) {
  return KERNELSCAN_BF16_TO_FLOAT(x);
}
template <typename T>
__host__ __device__ inline float to_float(T x) {
  return float(x);
}
template <typename T>
__host__ __device__ inline T from_float(float x) {
  if constexpr (std::is_same_v<T, gpu_f16>) {
    return KERNELSCAN_FLOAT_TO_F16(x);
  } else if constexpr (std::is_same_v<T, gpu_bf16>) {
    return KERNELSCAN_FLOAT_TO_BF16(x);
  } else {
    return T(x);
  }
}
