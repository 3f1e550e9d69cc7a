// The HIP engine on a real GPU, through a real daemon (issue 3): device discovery, the built-in
// GEMMs agreeing with the reference, STREAM, a custom kernel sweep passing verification, wrong
// and lazy kernels failing it, a compile error, and an out-of-bounds kernel failing its point as
// a device fault while the daemon carries on; HIP's half type, warp functions and headers on
// either vendor, and CUDA C++ kernels on NVIDIA. Each test skips itself where the daemon finds no
// GPU (a machine without one, or a build with KERNELSCAN_GPU=off). ctest label: gpu.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto k_job_timeout = 300s;

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_process::options o;
    o.engine = "auto";
    m_daemon.emplace(o);
    m_daemon->start();
    for (const auto& d : m_daemon->get("/api/v1/devices").body["devices"]) {
      if (d["engine"] == "hip") {
        m_gpu = d;
        break;
      }
    }
    if (m_gpu.is_null()) GTEST_SKIP() << "no GPU: the daemon serves mock devices only";
  }

  // Submits `spec` to the GPU and waits for it to end.
  json run(json spec) {
    spec["engine"] = "hip";
    spec["device"] = m_gpu["index"];
    const auto id = m_daemon->submit(spec);
    json job = m_daemon->wait_job(id, k_job_timeout);
    job["rows"] = m_daemon->get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"];
    return job;
  }

  std::optional<daemon_process> m_daemon;
  json m_gpu;
};

bool has_flag(const json& row, const std::string& flag) {
  const auto& f = row["flags"];
  return std::find(f.begin(), f.end(), flag) != f.end();
}

json gemm(const std::string& dtype, const std::string& impl) {
  return {{"op", "gemm"}, {"m", "M"}, {"n", "M"}, {"k", "K"}, {"dtype", dtype}, {"impl", impl}};
}

// c[i] = a[i] + s * b[i] over n elements, as a user would write it in HIP.
constexpr const char* k_axpy = R"(#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = WRITE;
})";

json axpy_job(const std::string& body, const std::string& n_expr = "N") {
  std::string source = k_axpy;
  source.replace(source.find("WRITE"), 5, body);
  json spec = parse_json(R"js({
    "kernel": {"op": "custom", "entry": "axpy", "block": [256, 1, 1],
      "grid": ["ceil(N/256)", 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
               {"name": "a", "type": "f32*", "count": "N"},
               {"name": "b", "type": "f32*", "count": "N"},
               {"name": "s", "type": "f32", "value": 3},
               {"name": "n", "type": "i32", "value": ")js" +
                         n_expr + R"js("}],
      "flops": "2*N", "bytes": "12*N",
      "reference": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32", "scalar": 3,
                    "a": "out", "b": "a", "c": "b"}},
    "sweep": {"N": [4096, 1048576, 16777216]}
  })js");
  spec["kernel"]["source"] = source;
  return spec;
}

// Runs where the others skip: a daemon that finds no GPU (whatever its build) starts cleanly and
// serves mock devices.
TEST(GpuAbsent, TheDaemonServesMockDevicesWithoutAGpu) {
  daemon_process::options o;
  o.engine = "auto";
  o.mock_devices = 2;
  daemon_process daemon(o);
  daemon.start();
  const json devices = daemon.get("/api/v1/devices").body["devices"];
  for (const auto& d : devices) {
    if (d["engine"] == "hip") GTEST_SKIP() << "this machine has a GPU";
  }
  ASSERT_EQ(devices.size(), 2u) << devices.dump();
  for (const auto& d : devices)
    EXPECT_EQ(d["engine"], "mock");
  const auto id = daemon.submit(stream_sweep(2, 0));
  EXPECT_EQ(daemon.wait_job(id)["status"], "succeeded");
  // Asking for GPUs only is a clear start-up error, not a daemon without devices.
  daemon_process::options hip_only;
  hip_only.engine = "hip";
  daemon_process gpu_daemon(hip_only);
  EXPECT_THROW(gpu_daemon.start(), std::runtime_error);
  EXPECT_NE(gpu_daemon.log().find("--engine hip"), std::string::npos) << gpu_daemon.log();
}

TEST_F(GpuTest, DiscoversTheDeviceAndItsProperties) {
  EXPECT_TRUE(m_gpu["vendor"] == "AMD" || m_gpu["vendor"] == "NVIDIA") << m_gpu.dump();
  const std::string arch = m_gpu["arch"];
  EXPECT_TRUE(arch.rfind("gfx", 0) == 0 || arch.rfind("sm_", 0) == 0) << arch;
  EXPECT_GT(m_gpu["compute_units"].get<int>(), 0);
  EXPECT_GT(m_gpu["memory_bytes"].get<double>(), 1e9);
  EXPECT_GT(m_gpu["l2_bytes"].get<double>(), 1e6);
  EXPECT_GT(m_gpu["clock_mhz"].get<double>(), 100);
  EXPECT_FALSE(m_gpu["driver"].get<std::string>().empty());
  std::cout << "GPU: " << m_gpu.dump() << "\n";
}

TEST_F(GpuTest, LibraryAndBuiltinGemmAgreeWithTheReference) {
  struct variant {
    std::string dtype, impl, layout_a, layout_b;
    double alpha, beta;
  };
  for (const variant& v : {variant{"f32", "library", "row", "row", 1, 0},
                           variant{"f32", "builtin", "row", "row", 1, 0},
                           variant{"f16", "library", "col", "row", 1, 0},
                           variant{"f16", "builtin", "col", "row", 1, 0},
                           variant{"bf16", "library", "row", "col", 0.5, 1},
                           variant{"bf16", "builtin", "row", "col", 0.5, 1},
                           variant{"f64", "library", "col", "col", 2, 0.5},
                           variant{"f64", "builtin", "col", "col", 2, 0.5}}) {
    SCOPED_TRACE(v.dtype + " " + v.impl + " " + v.layout_a + "/" + v.layout_b);
    json kernel = gemm(v.dtype, v.impl);
    kernel.update(
        {{"layout_a", v.layout_a}, {"layout_b", v.layout_b}, {"alpha", v.alpha}, {"beta", v.beta}});
    const json job = run({{"kernel", kernel}, {"sweep", {{"M", {256, 1000}}, {"K", {512}}}}});
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    ASSERT_EQ(job["rows"].size(), 2u);
    for (const auto& row : job["rows"]) {
      EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
      EXPECT_EQ(row["verification"]["trials"], 3);
      EXPECT_GT(row["metrics"]["tflops"].get<double>(), 0);
    }
  }
}

TEST_F(GpuTest, StreamOpsVerifyAndStayUnderTheBandwidth) {
  for (const std::string variant : {"copy", "scale", "add", "triad"}) {
    SCOPED_TRACE(variant);
    const json job = run({{"kernel", {{"op", "stream"}, {"variant", variant}, {"n", "N"}}},
                          {"sweep", {{"N", {1 << 20, 1 << 26}}}}});
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    for (const auto& row : job["rows"]) {
      EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
      const double gbps = row["metrics"]["gbps"];
      EXPECT_GT(gbps, 0);
      if (m_gpu.contains("datasheet")) {
        EXPECT_LT(gbps, 1.1 * m_gpu["datasheet"]["bandwidth_gbps"].get<double>()) << row.dump();
      }
      EXPECT_FALSE(has_flag(row, "faster_than_roofline")) << row.dump();
    }
  }
}

TEST_F(GpuTest, ACustomKernelSweepPassesVerification) {
  const json job = run(axpy_job("a[i] + s * b[i]"));
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  ASSERT_EQ(job["rows"].size(), 3u);
  for (const auto& row : job["rows"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["status"], "ok");
    EXPECT_EQ(row["verification"]["status"], "passed");
    EXPECT_EQ(row["verification"]["unwritten"], 0);
    EXPECT_LE(row["verification"]["max_rel_err"].get<double>(), 1e-4);
    EXPECT_GT(row["time_us"]["median"].get<double>(), 0);
    EXPECT_TRUE(row["flags"].empty());
  }
  // The smallest point runs for a few microseconds: hot, it would be batched; cold, it is not.
  EXPECT_EQ(job["rows"][0]["batch"], 1);
}

TEST_F(GpuTest, ACopyReferenceBindsOnlyTheArraysItUses) {
  json spec = axpy_job("a[i]");
  spec["kernel"]["reference"] = {{"op", "stream"}, {"variant", "copy"}, {"n", "N"},
                                 {"dtype", "f32"}, {"a", "a"},          {"c", "out"}};
  const json job = run(spec);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  for (const auto& row : job["rows"])
    EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
}

TEST_F(GpuTest, AWrongKernelFailsVerificationAndScoresZero) {
  const json job = run(axpy_job("a[i] + 2 * s * b[i]"));
  for (const auto& row : job["rows"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["verification"]["status"], "failed");
    EXPECT_TRUE(has_flag(row, "verification_failed"));
    EXPECT_EQ(row["fitness"]["combined_score"], 0);
  }
}

TEST_F(GpuTest, AKernelThatWritesHalfItsOutputIsCaught) {
  // n is passed as N/2: the second half of `out` keeps the NaN it was filled with.
  const json job = run(axpy_job("a[i] + s * b[i]", "N/2"));
  for (const auto& row : job["rows"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["verification"]["status"], "failed");
    EXPECT_GT(row["verification"]["unwritten"].get<double>(), 0);
    EXPECT_TRUE(has_flag(row, "output_not_written"));
  }
}

// Issue 4's adversarial suite on hardware: each way of cheating the score is caught.
TEST_F(GpuTest, CheatingKernelsAreFlaggedAndScoreZero) {
  struct cheat {
    std::string name, body, flag;
    std::string declared_bytes = "12*N";
  };
  const std::vector<cheat> cheats{
      // Writes nothing: the outputs keep the NaN they were filled with.
      {"writes nothing", "out[i]", "output_not_written"},
      {"writes zeros", "0.0f", "verification_failed"},
      // Computes in half precision and stores f32.
      {"low precision", "float(__half(a[i]) + __half(s) * __half(b[i]))", "precision_mismatch"},
      // Computes once, then skips the work on every timed launch (the output is no longer NaN),
      // reading a third of the bytes it declares: faster than the memory allows.
      {"memoises", "out[i] == out[i] ? out[i] : a[i] + s * b[i]", "faster_than_roofline"},
      // Declares ten times the bytes it moves, to look better than it is.
      {"overclaims", "a[i] + s * b[i]", "faster_than_roofline", "120*N"},
  };
  for (const cheat& c : cheats) {
    SCOPED_TRACE(c.name);
    json spec = axpy_job(c.body);
    spec["kernel"]["bytes"] = c.declared_bytes;
    spec["sweep"] = {{"N", {1 << 24}}};
    spec["fitness"] = {{"target_us", 1}};
    const json job = run(spec);
    ASSERT_EQ(job["rows"].size(), 1u) << job.dump();
    const json& row = job["rows"][0];
    EXPECT_TRUE(has_flag(row, c.flag)) << row.dump();
    EXPECT_EQ(row["fitness"]["combined_score"], 0) << row.dump();
  }
}

TEST_F(GpuTest, ACompileErrorFailsWithTheCompilerLog) {
  json spec = axpy_job("a[i] + s * b[i]");
  spec["kernel"]["source"] = "extern \"C\" __global__ void axpy(float* out) { out[0] = nope; }";
  spec["kernel"]["args"] = json::array({{{"name", "out"}, {"type", "f32*"}, {"count", "N"}}});
  spec["kernel"].erase("reference");
  const json job = run(spec);
  const json& row = job["rows"][0];
  EXPECT_EQ(row["status"], "failed") << row.dump();
  EXPECT_EQ(row["error"]["type"], "compile_error") << row.dump();
  EXPECT_NE(row["error"]["message"].get<std::string>().find("nope"), std::string::npos)
      << row.dump();
}

TEST_F(GpuTest, AnOutOfBoundsKernelIsADeviceFaultAndTheDaemonCarriesOn) {
  json bad = axpy_job("a[i] + s * b[i]");
  bad["kernel"]["source"] =
      "extern \"C\" __global__ void axpy(float* out, const float* a, const float* b, float s, "
      "int n) { out[(size_t)1 << 40] = 1.0f; }";
  bad["sweep"] = {{"N", {4096}}};
  const json job = run(bad);
  ASSERT_EQ(job["rows"].size(), 1u) << job.dump();
  const json& row = job["rows"][0];
  EXPECT_EQ(row["status"], "failed") << row.dump();
  EXPECT_EQ(row["error"]["type"], "device_fault") << row.dump();
  EXPECT_TRUE(has_flag(row, "device_fault"));
  // The next job runs on a fresh worker of the same device.
  const json good = run(axpy_job("a[i] + s * b[i]"));
  EXPECT_EQ(good["status"], "succeeded") << good.dump();
  EXPECT_EQ(m_daemon->get("/readyz").status, 200);
}

// HIP's half type and intrinsics (hip/hip_fp16.h) on either vendor: hipRTC's own on AMD, CUDA's
// through our mapping on NVIDIA.
TEST_F(GpuTest, AKernelIncludingHipFp16ComputesInHalfPrecision) {
  json spec = axpy_job("__half2float(__hadd(__float2half(a[i]), __float2half(b[i])))");
  spec["kernel"]["reference"] = {{"op", "stream"}, {"variant", "add"}, {"n", "N"},
                                 {"dtype", "f32"}, {"a", "a"},         {"b", "b"},
                                 {"c", "out"}};
  spec["verify"] = {{"atol", 2e-3}, {"rtol", 2e-3}};
  const json job = run(spec);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  for (const auto& row : job["rows"]) {
    EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
    // Half precision, not f32 under another name.
    EXPECT_GT(row["verification"]["max_abs_err"].get<double>(), 0) << row.dump();
  }
}

// HIP's maskless warp functions: native on AMD (64 lanes), mapped onto CUDA's _sync forms on
// NVIDIA (32 lanes). Each lane writes its warp's sum (a butterfly of __shfl_xor, and a
// __shfl_down reduction broadcast by __shfl) and the number of its warp's positive inputs
// (__ballot); a plain loop over the warp's inputs is the reference.
TEST_F(GpuTest, HipWarpShufflesAndVotesRunOnEitherVendor) {
  json spec = parse_json(R"js({
    "kernel": {"op": "custom", "entry": "warp_sums", "block": [256, 1, 1],
      "grid": ["N/256", 1, 1],
      "args": [{"name": "sum", "type": "f32*", "count": "N", "output": true},
               {"name": "positive", "type": "f32*", "count": "N", "output": true},
               {"name": "in", "type": "f32*", "count": "N"}],
      "flops": "N", "bytes": "12*N",
      "reference": {"op": "custom", "entry": "warp_sums_reference", "block": [256, 1, 1],
                    "grid": ["N/256", 1, 1]}},
    "sweep": {"N": [4096, 1048576]},
    "verify": {"atol": 1e-4, "rtol": 1e-4}
  })js");
  spec["kernel"]["source"] = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void warp_sums(float* sum, float* positive, const float* in) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[i], y = in[i];
  for (int d = warpSize / 2; d > 0; d /= 2) {
    x += __shfl_xor(x, d);
    y += __shfl_down(y, d);
  }
  y = __shfl(y, 0);
  if (!__all(x == x) || __any(x != x)) x = 0.0f;  // no NaN: both votes hold
  sum[i] = 0.5f * (x + y);
  positive[i] = float(__popcll(__ballot(in[i] > 0.0f)));
})";
  spec["kernel"]["reference"]["source"] = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void warp_sums_reference(float* sum, float* positive, const float* in) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int first = i / warpSize * warpSize;
  float s = 0.0f, p = 0.0f;
  for (int l = first; l < first + warpSize; ++l) {
    s += in[l];
    p += in[l] > 0.0f ? 1.0f : 0.0f;
  }
  sum[i] = s;
  positive[i] = p;
})";
  const json job = run(spec);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  for (const auto& row : job["rows"]) {
    EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
    EXPECT_EQ(row["verification"]["unwritten"], 0) << row.dump();
  }
}

// Every HIP header a kernel may include (source_policy.hpp) is found where the machine has it,
// or built into the run-time compiler.
TEST_F(GpuTest, EveryHipHeaderAKernelMayIncludeIsFound) {
  std::string includes;
  for (const char* h :
       {"hip/hip_runtime.h", "hip/hip_runtime_api.h", "hip/hip_fp16.h", "hip/hip_bf16.h",
        "hip/hip_bfloat16.h", "hip/hip_complex.h", "hip/hip_vector_types.h", "hip/math_functions.h",
        "hip/device_functions.h", "hip/hip_cooperative_groups.h", "hip/hip_math_constants.h"}) {
    includes += "#include <" + std::string(h) + ">\n";
  }
  json spec = axpy_job("a[i] + s * b[i]");
  spec["kernel"]["source"] = includes + spec["kernel"]["source"].get<std::string>();
  spec["sweep"] = {{"N", {4096}}};
  const json job = run(spec);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["rows"][0]["verification"]["status"], "passed") << job["rows"][0].dump();
}

// A .cu file's kernel as written (CUDA headers, cooperative groups) in language "cuda": measured
// and verified on NVIDIA; on any other GPU each point fails saying why.
TEST_F(GpuTest, ACudaKernelRunsOnNvidiaAndIsRefusedClearlyElsewhere) {
  json spec = axpy_job("a[i] + s * b[i]");
  spec["kernel"]["language"] = "cuda";
  spec["kernel"]["source"] = R"(#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  cg::thread_block block = cg::this_thread_block();
  const int i = block.group_index().x * block.size() + block.thread_rank();
  if (i < n) out[i] = a[i] + s * b[i];
})";
  const json job = run(spec);
  if (m_gpu["vendor"] == "NVIDIA") {
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    for (const auto& row : job["rows"])
      EXPECT_EQ(row["verification"]["status"], "passed") << row.dump();
    return;
  }
  EXPECT_EQ(job["status"], "failed") << job.dump();
  for (const auto& row : job["rows"]) {
    EXPECT_EQ(row["error"]["type"], "invalid_point") << row.dump();
    EXPECT_NE(row["error"]["message"].get<std::string>().find("runs on NVIDIA GPUs only"),
              std::string::npos)
        << row.dump();
  }
}

}  // namespace
}  // namespace kernelscan::testing
