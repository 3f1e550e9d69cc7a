// Run-time compilation of user kernels by this build's compiler (NVRTC in the cuda build, hipRTC
// in the hip build) against the headers installed on this machine, without a GPU: compiling needs
// none, only loading does. Built with the GPU engine; ctest label unit, so it runs in CI.
//
// KERNELSCAN_TEST_ARCHES: the architectures the build targets, comma-separated ("sm_80,sm_90",
// "gfx90a").
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/hip/rtc_compile.hpp"
#include "engine/source_policy.hpp"
#include "tests/device/device_kernels.hpp"

namespace kernelscan::gpu {
namespace {

std::vector<std::string> arches() {
  std::vector<std::string> out;
  std::stringstream in(KERNELSCAN_TEST_ARCHES);
  std::string a;
  while (std::getline(in, a, ','))
    if (!a.empty()) out.push_back(a);
  return out;
}

custom_kernel kernel(kernel_language language, std::string source, std::string entry) {
  custom_kernel k;
  k.language = language;
  k.source = std::move(source);
  k.entry = std::move(entry);
  return k;
}

// Compiles for every architecture of the build; fails the test with the compiler's log.
void expect_compiles(const custom_kernel& k, const std::string& symbol = "") {
  for (const auto& arch : arches()) {
    SCOPED_TRACE(arch);
    try {
      const compiled_kernel c = compile_kernel(k, arch);
      EXPECT_GT(c.code.size(), 64u);
      EXPECT_EQ(c.symbol, symbol.empty() ? k.entry : symbol);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n--- source:\n" << k.source;
    }
  }
}

// The test suite's axpy (tests/gpu/gpu_test.cpp): HIP with hip_fp16.h, as users write it.
constexpr const char* k_hip_axpy = R"(#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(__float2half(a[i])) + s * b[i];
})";

// A warp sum with HIP's maskless shuffles and votes.
constexpr const char* k_hip_warp_sum = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void warp_sum(float* out, const float* in, unsigned long long* mask) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = warpSize / 2; d > 0; d /= 2) v += __shfl_down(v, d);
  v = __shfl(v, 0);
  v += __shfl_xor(v, 0) - v;
  v += __shfl_up(v, 0) - v;
  const unsigned long long b = __ballot(v > 0.0f);
  if (__any(v != v) || !__all(v == v)) v = 0.0f;
  if (threadIdx.x % warpSize == 0) {
    out[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = v;
    mask[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = b;
  }
})";

TEST(RtcCompile, AHipKernelWithHipFp16Compiles) {
  expect_compiles(kernel(kernel_language::hip, k_hip_axpy, "axpy"));
}

TEST(RtcCompile, HipWarpShufflesAndVotesCompile) {
  expect_compiles(kernel(kernel_language::hip, k_hip_warp_sum, "warp_sum"));
}

TEST(RtcCompile, ACppEntryIsFoundByItsLoweredName) {
  const custom_kernel k = kernel(
      kernel_language::hip,
      "#include <hip/hip_runtime.h>\n__global__ void scale(float* x) { x[threadIdx.x] *= 2; }",
      "scale");
  for (const auto& arch : arches()) {
    const compiled_kernel c = compile_kernel(k, arch);
    EXPECT_NE(c.symbol, "scale");
    EXPECT_NE(c.symbol.find("scale"), std::string::npos) << c.symbol;
  }
}

TEST(RtcCompile, ACompileErrorCarriesTheLog) {
  const custom_kernel k = kernel(kernel_language::hip,
                                 "extern \"C\" __global__ void k(float* x) { x[0] = nope; }", "k");
  try {
    (void)compile_kernel(k, arches().front());
    ADD_FAILURE() << "compiled";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
  try {
    (void)compile_kernel(kernel(kernel_language::hip, k_hip_axpy, "missing"), arches().front());
    ADD_FAILURE() << "compiled";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

// The device suite's HIP kernels, filled in as the suite fills them: each compiles for every
// architecture of the build, so that a GPU run (rare) does not find one that does not.
TEST(RtcCompile, TheDeviceSuitesHipKernelsCompile) {
  using testing::replace_all;
  const std::string axpy =
      replace_all(testing::k_hip_template, "STATEMENT", "if (i < n) out[i] = h(a[i]) + s * b[i];");
  const std::string middle = replace_all(testing::k_hip_middle_cheat, "HONEST", "false");
  const std::string rms = replace_all(testing::k_hip_rms_template, "ENTRY", "rms");
  const std::pair<std::string, std::string> kernels[] = {
      {axpy, "axpy"},
      {testing::k_hip_repeat_cheat, "axpy"},
      {testing::k_hip_first_sets_only, "axpy"},
      {testing::k_hip_fused_batch, "axpy"},
      {testing::k_hip_scratch_batch, "axpy"},
      {testing::k_hip_stash_batch, "axpy"},
      {testing::k_hip_drawn_batch, "axpy"},
      {testing::k_hip_shared_tile, "axpy"},
      {testing::k_hip_local_array, "axpy"},
      {replace_all(middle, "ELEM", "float"), "axpy"},
      {replace_all(middle, "ELEM", "int"), "axpy"},
      {replace_all(rms, "ROW_SCALE", testing::k_rms_reduce), "rms"},
  };
  for (const auto& [source, entry] : kernels)
    expect_compiles(kernel(kernel_language::hip, source, entry));
}

TEST(RtcCompile, TheMachinesHeadersWereFound) {
  const std::string note = rtc_header_note();
  std::cout << note << "\n";
  EXPECT_EQ(note.find("none found"), std::string::npos) << note;
}

#if defined(KERNELSCAN_TEST_CUDA)

// A .cu file's kernel, as CUDA users write it.
constexpr const char* k_cuda_kernel = R"(#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <mma.h>
#include <cuda/std/cstdint>
namespace cg = cooperative_groups;
extern "C" __global__ void block_sum(float* out, const __half* in, const __nv_bfloat16* w,
                                     cuda::std::int32_t n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? __half2float(in[i]) * __bfloat162float(w[i]) : 0.0f;
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) atomicAdd(out, v);
})";

TEST(RtcCompile, ACudaKernelWithCudaHeadersCompiles) {
  expect_compiles(kernel(kernel_language::cuda, k_cuda_kernel, "block_sum"));
}

TEST(RtcCompile, EveryAllowedHeaderOfEitherLanguageCompiles) {
  for (const auto language : {kernel_language::hip, kernel_language::cuda}) {
    for (auto h : allowed_kernel_includes(language)) {
      SCOPED_TRACE(std::string(to_string(language)) + " " + std::string(h));
      expect_compiles(kernel(language,
                             "#include <" + std::string(h) +
                                 ">\nextern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
                             "k"));
    }
  }
}

TEST(RtcCompile, HipNamesAreNotCudaAndCudaNamesAreNotHip) {
  // The HIP mapping is for HIP sources only: a CUDA source sees CUDA as it is.
  EXPECT_THROW((void)compile_kernel(kernel(kernel_language::cuda,
                                           "extern \"C\" __global__ void k(float* x) "
                                           "{ x[0] = hipThreadIdx_x; }",
                                           "k"),
                                    arches().front()),
               compile_error);
}

#else

TEST(RtcCompile, CudaIsRefusedOnAmdAsAPointError) {
  try {
    (void)compile_kernel(
        kernel(kernel_language::cuda, "#include <cuda_fp16.h>\n__global__ void k() {}", "k"),
        arches().front());
    ADD_FAILURE() << "compiled";
  } catch (const unsupported_language_error& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("runs on NVIDIA GPUs only; this is an AMD GPU (" + arches().front() + ")"),
              std::string::npos)
        << why;
  }
}

TEST(RtcCompile, HipBfloat16IsBuiltInOrRefusedClearly) {
  const custom_kernel k = kernel(kernel_language::hip,
                                 "#include <hip/hip_runtime.h>\n#include <hip/hip_bfloat16.h>\n"
                                 "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
                                 "k");
  try {
    (void)compile_kernel(k, arches().front());
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("this hipRTC does not build hip_bfloat16"),
              std::string::npos)
        << e.what();
  }
}

#endif

}  // namespace
}  // namespace kernelscan::gpu
