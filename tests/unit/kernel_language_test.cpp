// The `language` of a custom kernel: how the wire names it, which headers each language's source
// may include (the codec checks the source against its own language), and which devices run it.
#include <gtest/gtest.h>

#include <string>

#include "api/job_spec_codec.hpp"
#include "engine/job_plan.hpp"
#include "engine/language_support.hpp"
#include "engine/mock_engine.hpp"

namespace kernelscan {
namespace {

// A .cu file's kernel as CUDA users write it: CUDA headers, CUDA names.
constexpr const char* k_cuda_source = R"(#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void scale(__half* y, const __half* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(s * __half2float(x[i]));
})";

json custom_job(const std::string& language, const std::string& source) {
  json body = parse_json(R"js({
    "kernel": {"op": "custom", "entry": "scale", "block": [256], "grid": ["ceil(N/256)"],
      "args": [{"name": "y", "type": "f16*", "count": "N", "output": true},
               {"name": "x", "type": "f16*", "count": "N"},
               {"name": "s", "type": "f32", "value": 2},
               {"name": "n", "type": "i32", "value": "N"}]},
    "sweep": {"N": [1024, 4096]}
  })js");
  body["kernel"]["language"] = language;
  body["kernel"]["source"] = source;
  return body;
}

std::vector<field_error> errors_of(const json& body) {
  try {
    (void)parse_job_spec(body, {});
  } catch (const validation_error& e) {
    return e.errors();
  }
  ADD_FAILURE() << "accepted " << body.dump();
  return {};
}

std::string error_for(const json& body, const std::string& field) {
  std::string all;
  for (const auto& e : errors_of(body)) {
    if (e.field == field) return e.message;
    all += " [" + e.field + "] " + e.message;
  }
  return "no error for " + field + ":" + all;
}

device_info nvidia_gpu() {
  device_info d;
  d.index = 0;
  d.engine = engine_kind::hip;
  d.vendor = "NVIDIA";
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  return d;
}

device_info amd_gpu() {
  device_info d;
  d.index = 1;
  d.engine = engine_kind::hip;
  d.vendor = "AMD";
  d.name = "AMD Instinct MI300X";
  d.arch = "gfx942";
  return d;
}

TEST(KernelLanguage, CudaIsParsedAndRoundTrips) {
  const job_spec spec = parse_job_spec(custom_job("cuda", k_cuda_source), {});
  const auto& c = std::get<custom_spec>(spec.kernel);
  EXPECT_EQ(c.kernel.language, kernel_language::cuda);
  const json canonical = to_json(spec);
  EXPECT_EQ(canonical["kernel"]["language"], "cuda");
  EXPECT_TRUE(parse_job_spec(canonical, spec_limits::stored()) == spec);
  // Without the field a kernel is HIP, as before.
  json body = custom_job("hip", "__global__ void scale() {}");
  body["kernel"].erase("language");
  const job_spec hip = parse_job_spec(body, {});
  EXPECT_EQ(std::get<custom_spec>(hip.kernel).kernel.language, kernel_language::hip);
  EXPECT_EQ(to_json(hip)["kernel"]["language"], "hip");
}

TEST(KernelLanguage, AnUnknownLanguageNamesTheChoices) {
  const std::string why = error_for(custom_job("glsl", "void main() {}"), "kernel.language");
  EXPECT_EQ(why, "\"glsl\" is not one of hip, cuda, opencl") << why;
  // The source is not judged against a language that does not exist.
  for (const auto& e : errors_of(custom_job("glsl", "#include <stdio.h>\n")))
    EXPECT_NE(e.field, "kernel.source") << e.message;
  EXPECT_NE(error_for(custom_job("", k_cuda_source), "kernel.language").find("not one of"),
            std::string::npos);
  json numeric = custom_job("hip", "__global__ void scale() {}");
  numeric["kernel"]["language"] = 3;
  EXPECT_NE(error_for(numeric, "kernel.language").find("string"), std::string::npos);
}

TEST(KernelLanguage, TheSourceIsCheckedAgainstItsOwnLanguage) {
  // CUDA headers in a HIP kernel: refused, pointing at the language to use.
  std::string why = error_for(custom_job("hip", k_cuda_source), "kernel.source");
  EXPECT_EQ(why.rfind("line 1: #include <cuda_runtime.h> is not allowed; hip kernels", 0), 0u)
      << why;
  // HIP headers in a CUDA kernel, and host headers in either.
  why = error_for(custom_job("cuda", "#include <hip/hip_runtime.h>\n"), "kernel.source");
  EXPECT_EQ(why.rfind("line 1: #include <hip/hip_runtime.h> is not allowed; cuda kernels", 0), 0u)
      << why;
  why =
      error_for(custom_job("cuda", "#include <cuda_fp16.h>\n#include <cstdio>\n"), "kernel.source");
  EXPECT_EQ(why.rfind("line 2: #include <cstdio> is not allowed", 0), 0u) << why;
  EXPECT_NE(error_for(custom_job("cuda", "#include <cuda.h>\n"), "kernel.source").find("cuda.h"),
            std::string::npos);
}

TEST(KernelLanguage, AReferenceKernelHasItsOwnLanguage) {
  json body = custom_job("cuda", k_cuda_source);
  body["kernel"]["reference"] = {
      {"op", "custom"},   {"language", "hip"}, {"source", "#include <cuda_fp16.h>\n"},
      {"entry", "scale"}, {"block", {256}},    {"grid", {"ceil(N/256)"}}};
  const std::string why = error_for(body, "kernel.reference.source");
  EXPECT_NE(why.find("hip kernels may include only"), std::string::npos) << why;
  body["kernel"]["reference"]["language"] = "cuda";
  const job_spec spec = parse_job_spec(body, {});
  const auto& ref = std::get<custom_kernel>(*std::get<custom_spec>(spec.kernel).reference);
  EXPECT_EQ(ref.language, kernel_language::cuda);
}

TEST(LanguageSupport, HipRunsEverywhereCudaOnNvidiaGpusOnly) {
  const device_info mock = mock_engine(*find_device_model("H100"), 2).device();
  for (const auto& d : {nvidia_gpu(), amd_gpu(), mock})
    EXPECT_FALSE(unsupported_language(kernel_language::hip, d)) << d.name;
  EXPECT_FALSE(unsupported_language(kernel_language::cuda, nvidia_gpu()));

  const auto amd = unsupported_language(kernel_language::cuda, amd_gpu());
  ASSERT_TRUE(amd);
  EXPECT_NE(amd->find("runs on NVIDIA GPUs only"), std::string::npos) << *amd;
  EXPECT_NE(amd->find("device 1 (AMD Instinct MI300X, gfx942) is an AMD GPU"), std::string::npos)
      << *amd;
  EXPECT_NE(amd->find("\"hip\""), std::string::npos) << *amd;

  // A mock of an NVIDIA part is still a mock: it compiles nothing.
  EXPECT_EQ(mock.vendor, "NVIDIA");
  const auto simulated = unsupported_language(kernel_language::cuda, mock);
  ASSERT_TRUE(simulated);
  EXPECT_NE(simulated->find("is a mock device"), std::string::npos) << *simulated;

  device_info other = amd_gpu();
  other.vendor = "Intel";
  const auto intel = unsupported_language(kernel_language::cuda, other);
  ASSERT_TRUE(intel);
  EXPECT_NE(intel->find("is an Intel GPU"), std::string::npos) << *intel;
}

TEST(LanguageSupport, EveryUserKernelOfAJobIsChecked) {
  job_spec spec = parse_job_spec(custom_job("hip", "__global__ void scale() {}"), {});
  EXPECT_FALSE(unsupported_language(spec, amd_gpu()));

  auto& c = std::get<custom_spec>(spec.kernel);
  custom_kernel ref = c.kernel;
  ref.language = kernel_language::cuda;
  c.reference = ref;
  auto why = unsupported_language(spec, amd_gpu());
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("kernel.reference.language: \"cuda\"", 0), 0u) << *why;
  EXPECT_FALSE(unsupported_language(spec, nvidia_gpu()));

  c.reference.reset();
  custom_spec baseline = c;
  baseline.kernel.language = kernel_language::cuda;
  spec.fitness.baseline = baseline;
  why = unsupported_language(spec, amd_gpu());
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("fitness.baseline.language: \"cuda\"", 0), 0u) << *why;

  spec.fitness.baseline.reset();
  c.kernel.language = kernel_language::cuda;
  why = unsupported_language(spec, amd_gpu());
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("kernel.language: \"cuda\"", 0), 0u) << *why;
  // Built-in ops have no language.
  const json stream = parse_json(R"js({"kernel": {"op": "stream", "variant": "copy", "n": 64}})js");
  EXPECT_FALSE(unsupported_language(parse_job_spec(stream, {}), amd_gpu()));
}

TEST(LanguageSupport, TheMockEngineFailsACudaPointClearlyAndMeasuresHip) {
  mock_engine engine(*find_device_model("MI300X"), 0);
  const job_plan cuda_plan(parse_job_spec(custom_job("cuda", k_cuda_source), {}), {});
  for (std::uint64_t i = 0; i < cuda_plan.size(); ++i) {
    const point_result r = engine.measure(cuda_plan, i, 1);
    EXPECT_EQ(r.status, point_status::failed);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->type, "unsupported");
    EXPECT_EQ(r.error->message.rfind("kernel.language: \"cuda\" (CUDA C++, compiled by NVRTC) "
                                     "runs on NVIDIA GPUs only; device 0 (AMD Instinct MI300X "
                                     "(mock), gfx942) is a mock device",
                                     0),
              0u)
        << r.error->message;
    EXPECT_EQ(r.params, cuda_plan.params(i));
  }
  const job_plan hip_plan(parse_job_spec(custom_job("hip", "__global__ void scale() {}"), {}), {});
  EXPECT_EQ(engine.measure(hip_plan, 0, 1).status, point_status::ok);
}

}  // namespace
}  // namespace kernelscan
