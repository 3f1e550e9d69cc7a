// The `language` of a custom kernel through a real daemon: a CUDA C++ kernel (a .cu file's, as
// written) is accepted, and on a device that cannot run it (here a mock device) every point
// fails with a clear error, while the same job in HIP is measured; headers of the other
// language are refused at submission, naming the line.
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

TEST(KernelLanguageApi, ACudaKernelOnAMockDeviceFailsEachPointSayingWhy) {
  daemon_process daemon;
  daemon.start();
  const auto id = daemon.submit(axpy_job("cuda", k_cuda_source));
  const json job = daemon.wait_job(id);
  EXPECT_EQ(job["status"], "failed") << job.dump();
  EXPECT_NE(job["error"].dump().find("NVIDIA GPUs only"), std::string::npos) << job.dump();

  const auto results = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results");
  ASSERT_EQ(results.status, 200);
  const json& rows = results.body["results"];
  ASSERT_EQ(rows.size(), 2u) << results.text;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["status"], "failed");
    EXPECT_EQ(row["error"]["type"], "invalid_point");
    const std::string message = row["error"]["message"];
    EXPECT_EQ(message.rfind("kernel.language: \"cuda\" (CUDA C++, compiled by NVRTC) runs on "
                            "NVIDIA GPUs only; device 0 (",
                            0),
              0u);
    EXPECT_NE(message.find("is a mock device"), std::string::npos);
    EXPECT_NE(message.find("write the kernel in \"hip\""), std::string::npos);
  }
  // The job as stored keeps its language.
  const auto stored = daemon.get("/api/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(stored.body["spec"]["kernel"]["language"], "cuda") << stored.text;

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
  EXPECT_NE(reply.text.find("kernel.language"), std::string::npos) << reply.text;
  EXPECT_NE(reply.text.find("is not one of hip, cuda"), std::string::npos) << reply.text;
}

}  // namespace
}  // namespace kernelscan::testing
