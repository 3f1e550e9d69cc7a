// Variants in the job spec: several kernels, each the job's `kernel` with the variant's fields
// laid over it, measured side by side at every point.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/job_plan.hpp"

namespace kernelscan {
namespace {

// A naive and a tiled OpenCL matmul sharing source, arguments and reference, and the library
// GEMM as a kernel of its own.
json matmul_body() {
  return parse_json(R"js({
    "kernel": {"op": "custom", "language": "opencl",
      "source": "__kernel void matmul_naive(__global float* c, __global const float* a, __global const float* b, int n) {} __kernel void matmul_tiled(__global float* c, __global const float* a, __global const float* b, int n) {}",
      "block": [8, 8, 1], "grid": ["ceil(N/8)", "ceil(N/8)", 1],
      "args": [{"name": "c", "type": "f32*", "count": "N*N", "output": true},
               {"name": "a", "type": "f32*", "count": "N*N"},
               {"name": "b", "type": "f32*", "count": "N*N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N*N*N", "bytes": "12*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                    "a": "a", "b": "b", "c": "c"}},
    "variants": [{"name": "naive", "entry": "matmul_naive"},
                 {"name": "tiled", "entry": "matmul_tiled", "block": [16, 16, 1],
                  "grid": ["ceil(N/16)", "ceil(N/16)", 1]},
                 {"name": "library", "op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32"}],
    "baseline": "naive",
    "sweep": {"N": [32, 64]}
  })js");
}

std::string dump(const std::vector<field_error>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += "\n  [" + e.field + "] " + e.message;
  return out;
}

std::vector<field_error> errors_of(const json& body, const spec_limits& limits = {}) {
  try {
    (void)parse_job_spec(body, limits);
  } catch (const validation_error& e) {
    return e.errors();
  }
  ADD_FAILURE() << "parse_job_spec accepted " << body.dump();
  return {};
}

::testing::AssertionResult rejects(const json& body, const std::string& field,
                                   const std::string& says, const spec_limits& limits = {}) {
  const auto errors = errors_of(body, limits);
  for (const auto& e : errors) {
    if (e.field == field && e.message.find(says) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no error [" << field << "] \"" << says << "\"; got" << dump(errors);
}

TEST(JobVariants, MergesEachVariantOverTheKernel) {
  const job_spec spec = parse_job_spec(matmul_body(), {});
  ASSERT_EQ(spec.variants.size(), 3u);
  EXPECT_EQ(spec.variants[0].name, "naive");
  EXPECT_EQ(spec.variants[1].name, "tiled");
  EXPECT_EQ(spec.variants[2].name, "library");
  EXPECT_EQ(spec.baseline_variant, "naive");

  const auto& naive = std::get<custom_spec>(spec.variants[0].kernel);
  EXPECT_EQ(naive.kernel.entry, "matmul_naive");
  EXPECT_EQ(naive.kernel.block[0].literal, 8);
  EXPECT_EQ(naive.kernel.language, kernel_language::opencl);
  ASSERT_TRUE(naive.reference);
  EXPECT_EQ(naive.args.size(), 4u);

  const auto& tiled = std::get<custom_spec>(spec.variants[1].kernel);
  EXPECT_EQ(tiled.kernel.entry, "matmul_tiled");
  EXPECT_EQ(tiled.kernel.block[0].literal, 16);
  EXPECT_EQ(tiled.kernel.grid[0].text, "ceil(N/16)");
  EXPECT_EQ(tiled.kernel.source, naive.kernel.source);  // from the kernel
  EXPECT_EQ(tiled.args, naive.args);
  EXPECT_EQ(tiled.reference, naive.reference);

  // Another op is a kernel of its own, not merged: no source, arguments or reference.
  const auto& library = std::get<gemm_spec>(spec.variants[2].kernel);
  EXPECT_EQ(library.m.text, "N");
  EXPECT_EQ(library.impl, gemm_impl::library);

  // The job's kernel is the first variant's, so that what asks for "the kernel" sees one.
  EXPECT_EQ(spec.kernel, spec.variants[0].kernel);
  EXPECT_EQ(spec.name, "custom variants");
}

TEST(JobVariants, CanonicalJsonRoundTrips) {
  const job_spec spec = parse_job_spec(matmul_body(), {});
  const json canonical = to_json(spec);
  ASSERT_TRUE(canonical.contains("variants"));
  EXPECT_EQ(canonical["baseline"], "naive");
  EXPECT_EQ(parse_job_spec(canonical, spec_limits::stored()), spec);
  // A variant that drops an optional field of the kernel keeps it dropped through the canonical
  // form.
  json body = matmul_body();
  body["variants"][1]["flops"] = nullptr;
  const job_spec dropped = parse_job_spec(body, {});
  EXPECT_FALSE(std::get<custom_spec>(dropped.variants[1].kernel).flops);
  EXPECT_EQ(parse_job_spec(to_json(dropped), spec_limits::stored()), dropped);
}

TEST(JobVariants, AJobWithoutVariantsIsUnchanged) {
  const json body = parse_json(R"js({"kernel": {"op": "gemm", "m": "N", "n": "N", "k": "N"},
                                     "sweep": {"N": [64]}})js");
  const job_spec spec = parse_job_spec(body, {});
  EXPECT_TRUE(spec.variants.empty());
  EXPECT_FALSE(spec.baseline_variant);
  const json canonical = to_json(spec);
  EXPECT_FALSE(canonical.contains("variants"));
  EXPECT_FALSE(canonical.contains("baseline"));
  const job_plan plan(spec, {});
  EXPECT_EQ(plan.variant_count(), 0u);
  EXPECT_EQ(plan.kernels_per_point(), 1u);
}

TEST(JobVariants, BaselineIsOptional) {
  json body = matmul_body();
  body.erase("baseline");
  const job_spec spec = parse_job_spec(body, {});
  EXPECT_FALSE(spec.baseline_variant);
  EXPECT_EQ(parse_job_spec(to_json(spec), spec_limits::stored()), spec);
}

TEST(JobVariants, PlanResolvesEveryVariantAtEveryPoint) {
  const job_plan plan(parse_job_spec(matmul_body(), {}), {});
  EXPECT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan.variant_count(), 3u);
  EXPECT_EQ(plan.kernels_per_point(), 3u);
  EXPECT_EQ(plan.baseline_variant(), 0u);
  const auto tiled = std::get<custom_instance>(plan.resolve_variant(1, 1));
  EXPECT_EQ(tiled.launch.block[0], 16);
  EXPECT_EQ(tiled.launch.grid[0], 4);  // ceil(64/16)
  EXPECT_EQ(tiled.launch.kernel->entry, "matmul_tiled");
  const auto naive = std::get<custom_instance>(plan.resolve_variant(0, 1));
  EXPECT_EQ(naive.launch.grid[0], 8);  // ceil(64/8)
  const auto library = std::get<gemm_instance>(plan.resolve_variant(2, 0));
  EXPECT_EQ(library.m, 32);
  EXPECT_NO_THROW(plan.validate_all());
}

TEST(JobVariants, PlanErrorsNameTheVariant) {
  json body = matmul_body();
  body["variants"][1]["grid"] = json::array({"N/48", 1, 1});  // 64/48 is not an integer
  const job_plan plan(parse_job_spec(body, {}), {});
  try {
    plan.validate_all();
    FAIL() << "validate_all accepted a grid that is not an integer";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "variants[1].grid[0]") << e.what();
  }
}

TEST(JobVariants, MemoryOfAllVariantsTogetherIsLimited) {
  // Each variant alone fits in the limit; the three together do not.
  plan_limits limits;
  limits.max_point_bytes = 3 * 64 * 64 * 4 + 64 * 64 * 4;  // one custom variant at N=64 and more
  const job_plan plan(parse_job_spec(matmul_body(), {}), limits);
  try {
    plan.validate_all();
    FAIL() << "validate_all accepted variants over the memory limit together";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "variants") << e.what();
    EXPECT_NE(e.reason().find("N=64"), std::string::npos) << e.reason();
  }
}

TEST(JobVariantsErrors, VariantsMustBeAListOfTwoToSixteen) {
  json body = matmul_body();
  body["variants"] = json::array({body["variants"][0]});
  EXPECT_TRUE(rejects(body, "variants", "2 to 16 variants"));
  body["variants"] = json::object();
  EXPECT_TRUE(rejects(body, "variants", "2 to 16 variants"));
  json many = json::array();
  for (int i = 0; i < 17; ++i)
    many.push_back({{"name", "v" + std::to_string(i)}, {"entry", "matmul_naive"}});
  body["variants"] = many;
  EXPECT_TRUE(rejects(body, "variants", "not a list of 17"));
}

TEST(JobVariantsErrors, NamesAreRequiredValidAndUnique) {
  json body = matmul_body();
  body["variants"][1].erase("name");
  EXPECT_TRUE(rejects(body, "variants[1].name", "is required"));
  body = matmul_body();
  body["variants"][1]["name"] = "has space";
  EXPECT_TRUE(rejects(body, "variants[1].name", "is not a variant name"));
  body["variants"][1]["name"] = std::string(65, 'a');
  EXPECT_TRUE(rejects(body, "variants[1].name", "1 to 64"));
  body["variants"][1]["name"] = 7;
  EXPECT_TRUE(rejects(body, "variants[1].name", "must be a string"));
  body["variants"][1]["name"] = "naive";
  EXPECT_TRUE(rejects(body, "variants[1].name", "earlier variant"));
  body["variants"][1] = "tiled";
  EXPECT_TRUE(rejects(body, "variants[1]", "must be an object"));
}

TEST(JobVariantsErrors, ErrorsNameTheVariantsField) {
  json body = matmul_body();
  body["variants"][1]["block"] = json::array({16, "x", 1});
  EXPECT_TRUE(rejects(body, "variants[1].block[1]", "unknown name x"));
  body = matmul_body();
  body["variants"][1]["blok"] = json::array({16, 16, 1});
  EXPECT_TRUE(rejects(body, "variants[1].blok", "unknown field"));
  body = matmul_body();
  body["variants"][2]["dtype"] = "f17";
  EXPECT_TRUE(rejects(body, "variants[2].dtype", "is not one of"));
  body = matmul_body();
  body["variants"][2].erase("m");
  EXPECT_TRUE(rejects(body, "variants[2].m", "is required"));
  body = matmul_body();
  body["variants"][0]["entry"] = 5;
  EXPECT_TRUE(rejects(body, "variants[0].entry", "must be a string"));
}

TEST(JobVariantsErrors, AFieldOfTheKernelIsReportedOnceAtTheKernel) {
  json body = matmul_body();
  body["kernel"]["flops"] = "2*Q";
  const auto errors = errors_of(body);
  int at_kernel = 0;
  for (const auto& e : errors) {
    EXPECT_EQ(e.field.rfind("variants[", 0), std::string::npos) << dump(errors);
    if (e.field == "kernel.flops") ++at_kernel;
  }
  EXPECT_EQ(at_kernel, 1) << dump(errors);
  // A required field neither gives is the variant's to give.
  body = matmul_body();
  body["kernel"].erase("block");
  body["variants"][1].erase("block");
  EXPECT_TRUE(rejects(body, "variants[0].block", "is required"));
  EXPECT_TRUE(rejects(body, "variants[1].block", "is required"));
}

TEST(JobVariantsErrors, BaselineMustNameAVariant) {
  json body = matmul_body();
  body["baseline"] = "fast";
  EXPECT_TRUE(rejects(body, "baseline", "\"fast\" is not a variant (naive, tiled, library)"));
  body["baseline"] = 3;
  EXPECT_TRUE(rejects(body, "baseline", "must be a string"));
  body = parse_json(R"js({"kernel": {"op": "gemm", "m": "N", "n": "N", "k": "N"},
                          "baseline": "naive", "sweep": {"N": [64]}})js");
  EXPECT_TRUE(rejects(body, "baseline", "give \"variants\""));
}

TEST(JobVariantsErrors, FitnessBaselineIsAVariant) {
  json body = matmul_body();
  body["fitness"] = {{"baseline", {{"op", "gemm"}, {"m", "N"}, {"n", "N"}, {"k", "N"}}}};
  EXPECT_TRUE(rejects(body, "fitness.baseline", "name it in \"baseline\""));
  // A target time goes with variants.
  body["fitness"] = {{"target_us", 10}};
  EXPECT_NO_THROW((void)parse_job_spec(body, {}));
}

TEST(JobVariantsErrors, PointLimitCoversVariantsTimesPoints) {
  json body = matmul_body();
  body["sweep"]["N"] = json::array({32, 64, 128, 256});
  spec_limits limits;
  limits.max_points = 11;  // 4 points fit; 4 x 3 variants do not
  EXPECT_TRUE(rejects(body, "variants", "12 measurements; the limit is 11", limits));
  limits.max_points = 12;
  EXPECT_NO_THROW((void)parse_job_spec(body, limits));
}

TEST(JobVariantsErrors, KernelMustBeAnObject) {
  json body = matmul_body();
  body["kernel"] = "custom";
  EXPECT_TRUE(rejects(body, "kernel", "must be an object"));
}

}  // namespace
}  // namespace kernelscan
