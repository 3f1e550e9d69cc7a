#include "engine/hip/blas.hpp"

#include <string>

#include "engine/gemm_layout.hpp"

#if defined(KERNELSCAN_GPU_CUDA)
#include <cublas_v2.h>
#elif defined(KERNELSCAN_HAVE_HIPBLAS)
// hipBLAS 2 (ROCm 6) takes hipDataType and hipblasComputeType_t under HIPBLAS_V2; hipBLAS 3
// (ROCm 7) only so. The build asks for hipBLAS 2 or newer.
#define HIPBLAS_V2
#include <hipblas/hipblas.h>
#endif

namespace kernelscan::gpu {

#if defined(KERNELSCAN_GPU_CUDA)

namespace {
void blas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
  }
}
}  // namespace

// cuBLAS's recommended workspace for Hopper; given once, so no call allocates one.
constexpr std::size_t k_workspace_bytes = std::size_t(32) << 20;

struct gemm_library::impl {
  cublasHandle_t handle{};
  hipStream_t stream{};
  bool bound = false;
  buffer workspace;
};

gemm_library::gemm_library() : m_impl(std::make_unique<impl>()) {
  blas_check(cublasCreate(&m_impl->handle), "cublasCreate");
}
gemm_library::~gemm_library() {
  (void)cublasDestroy(m_impl->handle);
}
void gemm_library::bind(hipStream_t s) {
  blas_check(cublasSetStream(m_impl->handle, s), "cublasSetStream");
  if (!m_impl->workspace.get()) m_impl->workspace = buffer(k_workspace_bytes);
  blas_check(cublasSetWorkspace(m_impl->handle, m_impl->workspace.get(), k_workspace_bytes),
             "cublasSetWorkspace");
  m_impl->stream = s;
  m_impl->bound = true;
}
bool gemm_library::available() {
  return true;
}
std::string gemm_library::name() {
  return "cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR);
}

void gemm_library::gemm(const gemm_args& g, hipStream_t s) {
  const blas_gemm_call c = column_major_call(g.m, g.n, g.k, g.layout_a, g.layout_b);
  if (!m_impl->bound || m_impl->stream != s) bind(s);
  cudaDataType_t type{};
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (g.type) {
    case dtype::f64:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case dtype::f32:
      type = CUDA_R_32F;
      break;
    case dtype::f16:
      type = CUDA_R_16F;
      break;
    case dtype::bf16:
      type = CUDA_R_16BF;
      break;
    default:
      throw std::invalid_argument("gemm: the library takes f64, f32, f16 or bf16");
  }
  const double alpha64 = g.alpha, beta64 = g.beta;
  const float alpha32 = float(g.alpha), beta32 = float(g.beta);
  const void* alpha = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&beta64) : &beta32;
  blas_check(
      cublasGemmEx(m_impl->handle, c.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                   c.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N, int(c.rows), int(c.cols),
                   int(c.depth), alpha, g.b, type, int(c.ld_first), g.a, type, int(c.ld_second),
                   beta, g.c, type, int(c.ld_c), compute, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}

#elif defined(KERNELSCAN_HAVE_HIPBLAS)

namespace {
void blas_check(hipblasStatus_t s, const char* what) {
  if (s != HIPBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": hipBLAS status " + std::to_string(int(s)));
  }
}
}  // namespace

struct gemm_library::impl {
  hipblasHandle_t handle{};
  hipStream_t stream{};
  bool bound = false;
};

gemm_library::gemm_library() : m_impl(std::make_unique<impl>()) {
  blas_check(hipblasCreate(&m_impl->handle), "hipblasCreate");
}
gemm_library::~gemm_library() {
  (void)hipblasDestroy(m_impl->handle);
}
void gemm_library::bind(hipStream_t s) {
  blas_check(hipblasSetStream(m_impl->handle, s), "hipblasSetStream");
  m_impl->stream = s;
  m_impl->bound = true;
}
bool gemm_library::available() {
  return true;
}
std::string gemm_library::name() {
  return "hipBLAS";
}

void gemm_library::gemm(const gemm_args& g, hipStream_t s) {
  const blas_gemm_call c = column_major_call(g.m, g.n, g.k, g.layout_a, g.layout_b);
  if (!m_impl->bound || m_impl->stream != s) bind(s);
  hipDataType type{};
  hipblasComputeType_t compute = HIPBLAS_COMPUTE_32F;
  switch (g.type) {
    case dtype::f64:
      type = HIP_R_64F;
      compute = HIPBLAS_COMPUTE_64F;
      break;
    case dtype::f32:
      type = HIP_R_32F;
      break;
    case dtype::f16:
      type = HIP_R_16F;
      break;
    case dtype::bf16:
      type = HIP_R_16BF;
      break;
    default:
      throw std::invalid_argument("gemm: the library takes f64, f32, f16 or bf16");
  }
  const double alpha64 = g.alpha, beta64 = g.beta;
  const float alpha32 = float(g.alpha), beta32 = float(g.beta);
  const void* alpha =
      compute == HIPBLAS_COMPUTE_64F ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = compute == HIPBLAS_COMPUTE_64F ? static_cast<const void*>(&beta64) : &beta32;
  blas_check(
      hipblasGemmEx(m_impl->handle, c.transpose_first ? HIPBLAS_OP_T : HIPBLAS_OP_N,
                    c.transpose_second ? HIPBLAS_OP_T : HIPBLAS_OP_N, int(c.rows), int(c.cols),
                    int(c.depth), alpha, g.b, type, int(c.ld_first), g.a, type, int(c.ld_second),
                    beta, g.c, type, int(c.ld_c), compute, HIPBLAS_GEMM_DEFAULT),
      "hipblasGemmEx");
}

#else

struct gemm_library::impl {};
gemm_library::gemm_library() = default;
gemm_library::~gemm_library() = default;
void gemm_library::bind(hipStream_t) {}
bool gemm_library::available() {
  return false;
}
std::string gemm_library::name() {
  return "none: this build found no hipBLAS (install ROCm's hipblas and rebuild)";
}
void gemm_library::gemm(const gemm_args&, hipStream_t) {
  throw std::invalid_argument("impl \"library\": " + name() + "; use impl \"builtin\"");
}

#endif

}  // namespace kernelscan::gpu
