// What a job needs of a device (f64 arithmetic, its GEMMs' element types in the implementation
// each asks for), what a device lacks, and the refusal that names the field and the way out.
#include "engine/device_needs.hpp"

#include <gtest/gtest.h>

#include <string>

#include "api/job_spec_codec.hpp"

namespace kernelscan {
namespace {

job_spec spec_of(const std::string& text) {
  return parse_job_spec(parse_json(text), {});
}

job_spec gemm(const std::string& dtype, const std::string& impl) {
  return spec_of(R"({"kernel": {"op": "gemm", "m": 64, "n": 64, "k": 64, "dtype": ")" + dtype +
                 R"(", "impl": ")" + impl + R"("}})");
}

// PoCL on an x86 CPU as Debian ships it: f64, no half, CLBlast with f32 and f64.
device_info pocl_cpu(bool fp64 = true) {
  device_info d;
  d.index = 0;
  d.engine = engine_kind::opencl;
  d.type = "cpu";
  d.name = "pthread-x86";
  d.capabilities.fp16 = false;
  d.capabilities.fp64 = fp64;
  d.capabilities.gemm_library = "CLBlast";
  d.capabilities.gemm_library_types = {dtype::f32};
  d.capabilities.gemm_builtin_types = {dtype::f32, dtype::f16, dtype::bf16};
  if (fp64) {
    d.capabilities.gemm_library_types.push_back(dtype::f64);
    d.capabilities.gemm_builtin_types.push_back(dtype::f64);
  }
  return d;
}

TEST(DeviceNeeds, AGpuHasEveryNeedThereIs) {
  const device_capabilities gpu;
  EXPECT_EQ(device_lacks(gpu), 0u);
  for (const char* t : {"f64", "f32", "f16", "bf16"}) {
    for (const char* impl : {"library", "builtin"}) {
      SCOPED_TRACE(std::string(t) + " " + impl);
      EXPECT_NE(job_needs(gemm(t, impl)), 0u);
      device_info d;
      EXPECT_FALSE(unmet_need(gemm(t, impl), d));
    }
  }
}

TEST(DeviceNeeds, EachGemmNeedsItsTypeInTheImplementationItNames) {
  const need_bits lacks = device_lacks(pocl_cpu().capabilities);
  EXPECT_NE(job_needs(gemm("f16", "library")) & lacks, 0u);
  EXPECT_EQ(job_needs(gemm("f16", "builtin")) & lacks, 0u);
  EXPECT_EQ(job_needs(gemm("f32", "library")) & lacks, 0u);
  EXPECT_NE(job_needs(gemm("f16", "library")), job_needs(gemm("f16", "builtin")));
  EXPECT_NE(job_needs(gemm("f16", "library")), job_needs(gemm("bf16", "library")));

  const auto why = unmet_need(gemm("f16", "library"), pocl_cpu());
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "kernel.dtype: an f16 GEMM with impl \"library\" does not run on device 0 "
            "(pthread-x86): CLBlast there has no f16 GEMM (the device lacks cl_khr_fp16). Use "
            "impl \"builtin\"");
  const auto bf16 = unmet_need(gemm("bf16", "library"), pocl_cpu());
  ASSERT_TRUE(bf16);
  EXPECT_NE(bf16->find("a bf16 GEMM"), std::string::npos) << *bf16;
}

TEST(DeviceNeeds, F64NeedsDoubleArithmeticWhereverTheDeviceFillsOrComputesIt) {
  const device_info no_fp64 = pocl_cpu(false);
  const auto stream = unmet_need(
      spec_of(R"({"kernel": {"op": "stream", "variant": "triad", "n": 4096, "dtype": "f64"}})"),
      no_fp64);
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->rfind("kernel.dtype: f64 does not run on device 0", 0), 0u) << *stream;
  EXPECT_NE(stream->find("no cl_khr_fp64"), std::string::npos) << *stream;

  // A user kernel's f64 buffer is filled on the device; an f64 scalar is not.
  const std::string custom = R"({"engine": "opencl", "kernel": {"op": "custom",
    "language": "opencl", "entry": "k", "block": [64], "grid": [1],
    "source": "__kernel void k(__global float* y, __global const double* x, double s) {}",
    "args": [{"name": "y", "type": "f32*", "count": 64, "output": true},
             {"name": "x", "type": "f64*", "count": 64},
             {"name": "s", "type": "f64", "value": 2}]}})";
  const auto arg = unmet_need(spec_of(custom), no_fp64);
  ASSERT_TRUE(arg);
  EXPECT_EQ(arg->rfind("kernel.args[1].dtype: f64", 0), 0u) << *arg;
  EXPECT_FALSE(unmet_need(spec_of(custom), pocl_cpu(true)));
}

TEST(DeviceNeeds, AReferenceGemmFallsBackSoOnlyItsF64IsANeed) {
  const std::string custom = R"({"engine": "opencl", "kernel": {"op": "custom",
    "language": "opencl", "entry": "mm", "block": [8, 8], "grid": [8, 8],
    "source": "__kernel void mm(__global half* c, __global const half* a, __global const half* b) {}",
    "args": [{"name": "c", "type": "f16*", "count": 4096, "output": true},
             {"name": "a", "type": "f16*", "count": 4096},
             {"name": "b", "type": "f16*", "count": 4096}],
    "reference": {"op": "gemm", "m": 64, "n": 64, "k": 64, "dtype": "f16",
                  "a": "a", "b": "b", "c": "c"}}})";
  EXPECT_EQ(job_needs(spec_of(custom)), 0u);
  EXPECT_FALSE(unmet_need(spec_of(custom), pocl_cpu(false)));
}

TEST(DeviceNeeds, TheRefusalNamesTheVariantOrBaselineThatNeedsIt) {
  const job_spec variants = spec_of(R"({"kernel": {"op": "gemm", "m": 64, "n": 64, "k": 64,
    "dtype": "f16", "impl": "builtin"}, "variants": [{"name": "ours"},
    {"name": "vendor", "impl": "library"}]})");
  const auto why = unmet_need(variants, pocl_cpu());
  ASSERT_TRUE(why);
  EXPECT_EQ(
      why->rfind("variants[1].dtype: variant \"vendor\": an f16 GEMM with impl \"library\"", 0), 0u)
      << *why;

  const job_spec baseline = spec_of(R"({"kernel": {"op": "gemm", "m": 64, "n": 64, "k": 64,
    "dtype": "f16", "impl": "builtin"}, "fitness": {"baseline": {"op": "gemm", "m": 64, "n": 64,
    "k": 64, "dtype": "f16", "impl": "library"}}})");
  const auto base = unmet_need(baseline, pocl_cpu());
  ASSERT_TRUE(base);
  EXPECT_EQ(base->rfind("fitness.baseline.dtype: ", 0), 0u) << *base;
}

TEST(DeviceNeeds, AGpuBuildWithoutAGemmLibrarySaysSo) {
  device_info d;
  d.engine = engine_kind::hip;
  d.name = "AMD Instinct MI210";
  d.arch = "gfx90a";
  d.capabilities.gemm_library_types.clear();
  const auto why = unmet_need(gemm("f32", "library"), d);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("its engine has no GEMM library in this build. Use impl \"builtin\""),
            std::string::npos)
      << *why;
  EXPECT_FALSE(unmet_need(gemm("f32", "builtin"), d));
}

}  // namespace
}  // namespace kernelscan
