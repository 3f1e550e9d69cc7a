// The `language` of a custom kernel through a real daemon: a CUDA C++ kernel (a .cu file's, as
// written) sent to a daemon with no device that can run it (here mock devices) is refused at
// submission saying why, while the same job in HIP is measured; headers of the other language
// are refused at submission, naming the line.
#include <gtest/gtest.h>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

constexpr const char* k_cuda_source = R"(#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + s * __half2float(__float2half(b[i]));
})";

constexpr const char* k_hip_source = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + s * b[i];
})";

json axpy_job(const std::string& language, const std::string& source) {
  json spec = parse_json(R"js({
    "kernel": {"op": "custom", "entry": "axpy", "block": [256, 1, 1],
      "grid": ["ceil(N/256)", 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
               {"name": "a", "type": "f32*", "count": "N"},
               {"name": "b", "type": "f32*", "count": "N"},
               {"name": "s", "type": "f32", "value": 3},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N", "bytes": "12*N"},
    "sweep": {"N": [4096, 65536]},
    "timing": {"max_time_ms": 50}
  })js");
  spec["kernel"]["language"] = language;
  spec["kernel"]["source"] = source;
  return spec;
}

TEST(KernelLanguageApi, ACudaKernelWithNoDeviceToRunItIsRefusedSayingWhy) {
  daemon_process daemon;
  daemon.start();
  const auto reply = daemon.post_json("/api/v1/jobs", axpy_job("cuda", k_cuda_source));
  EXPECT_EQ(reply.status, 422) << reply.text;
  const json& detail = reply.body["error"]["details"][0];
  EXPECT_EQ(detail["field"], "kernel.language") << reply.text;
  const std::string message = detail["message"];
  EXPECT_NE(message.find("\"cuda\" (CUDA C++, compiled by NVRTC) runs on NVIDIA GPUs only; "
                         "device 0 ("),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("is a mock device"), std::string::npos) << message;
  EXPECT_NE(message.find("write the kernel in \"hip\""), std::string::npos) << message;
  // Nothing half-accepted was stored.
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);

  // The same kernel in HIP is measured.
  const json hip = daemon.wait_job(daemon.submit(axpy_job("hip", k_hip_source)));
  EXPECT_EQ(hip["status"], "succeeded") << hip.dump();
}

TEST(KernelLanguageApi, HeadersOfTheOtherLanguageAreRefusedAtSubmission) {
  daemon_process daemon;
  daemon.start();
  auto reply = daemon.post_json("/api/v1/jobs", axpy_job("hip", k_cuda_source));
  EXPECT_EQ(reply.status, 422) << reply.text;
  EXPECT_NE(reply.text.find("kernel.source"), std::string::npos) << reply.text;
  EXPECT_NE(reply.text.find("line 1: #include <cuda_runtime.h> is not allowed; hip kernels"),
            std::string::npos)
      << reply.text;

  reply = daemon.post_json("/api/v1/jobs", axpy_job("cuda", k_hip_source));
  EXPECT_EQ(reply.status, 422) << reply.text;
  EXPECT_NE(reply.text.find("#include <hip/hip_runtime.h> is not allowed; cuda kernels"),
            std::string::npos)
      << reply.text;

  reply = daemon.post_json("/api/v1/jobs", axpy_job("opencl", k_hip_source));
  EXPECT_EQ(reply.status, 422) << reply.text;
  EXPECT_NE(reply.text.find("#include <hip/hip_runtime.h> is not allowed; opencl kernels may "
                            "include nothing"),
            std::string::npos)
      << reply.text;

  reply = daemon.post_json("/api/v1/jobs", axpy_job("glsl", k_hip_source));
  EXPECT_EQ(reply.status, 422) << reply.text;
  EXPECT_NE(reply.text.find("kernel.language"), std::string::npos) << reply.text;
  EXPECT_NE(reply.text.find("is not one of hip, cuda, opencl"), std::string::npos) << reply.text;
}

}  // namespace
}  // namespace kernelscan::testing
