#include "engine/job_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace kernelscan {
namespace {

int_expr ex(std::string text) {
  return int_expr{std::move(text), std::nullopt};
}
num_expr nx(std::string text) {
  return num_expr{std::move(text), std::nullopt};
}

job_spec gemm_job() {
  job_spec spec;
  gemm_spec g;
  g.m = ex("M");
  g.n = ex("2*N");
  g.k = int_expr::of(64);
  g.type = dtype::f16;
  g.layout_b = layout::col;
  g.alpha = 2.0;
  g.beta = 0.5;
  g.impl = gemm_impl::builtin;
  spec.kernel = g;
  spec.sweep = sweep({{"M", {128, 256}}, {"N", {10, 20, 30}}});
  return spec;
}

job_spec stream_job() {
  job_spec spec;
  stream_spec s;
  s.variant = stream_variant::copy;
  s.n = ex("N*1024");
  s.type = dtype::bf16;
  s.scalar = 7.0;
  spec.kernel = s;
  spec.sweep = sweep({{"N", {1, 4, 16}}});
  return spec;
}

kernel_arg buffer(std::string name, std::string count, bool output = false) {
  kernel_arg a;
  a.name = std::move(name);
  a.type = dtype::f32;
  a.pointer = true;
  a.count = ex(std::move(count));
  a.output = output;
  return a;
}

kernel_arg scalar(std::string name, dtype type, std::string value) {
  kernel_arg a;
  a.name = std::move(name);
  a.type = type;
  a.value = nx(std::move(value));
  return a;
}

job_spec custom_job(std::vector<std::int64_t> n_values = {256, 257, 1000, 1024}) {
  job_spec spec;
  custom_spec c;
  c.kernel.source = "__global__ void k() {}";
  c.kernel.entry = "k";
  c.kernel.block = {int_expr::of(256), int_expr::of(1), int_expr::of(1)};
  c.kernel.grid = {ex("ceil(N/256)"), int_expr::of(1), int_expr::of(1)};
  c.kernel.shared_bytes = ex("4*min(N, 512)");
  c.args = {scalar("n", dtype::i32, "N"), scalar("a", dtype::f32, "N/8"), buffer("x", "N"),
            buffer("y", "2*N", true)};
  c.flops = nx("2*N");
  c.bytes = num_expr{"12.5", 12.5};
  custom_kernel ref;
  ref.source = "__global__ void r() {}";
  ref.entry = "r";
  ref.block = {int_expr::of(128), int_expr::of(1), int_expr::of(1)};
  ref.grid = {ex("cdiv(N, 128)"), int_expr::of(1), int_expr::of(1)};
  c.reference = ref;
  spec.kernel = c;
  spec.sweep = sweep({{"N", std::move(n_values)}});
  return spec;
}

TEST(JobPlan, ResolvesGemmAtEachPoint) {
  const job_plan plan(gemm_job(), {});
  ASSERT_EQ(plan.size(), 6u);
  struct expected {
    std::uint64_t index;
    std::int64_t m, n;
  };
  for (const auto& e : {expected{0, 128, 20}, expected{2, 128, 60}, expected{4, 256, 40},
                        expected{5, 256, 60}, expected{1, 128, 40}}) {
    const auto k = plan.resolve(e.index);
    const auto& g = std::get<gemm_instance>(k);
    EXPECT_EQ(g.m, e.m) << "point " << e.index;
    EXPECT_EQ(g.n, e.n) << "point " << e.index;
    EXPECT_EQ(g.k, 64);
    EXPECT_EQ(g.type, dtype::f16);
    EXPECT_EQ(g.layout_a, layout::row);
    EXPECT_EQ(g.layout_b, layout::col);
    EXPECT_DOUBLE_EQ(g.alpha, 2.0);
    EXPECT_DOUBLE_EQ(g.beta, 0.5);
    EXPECT_EQ(g.impl, gemm_impl::builtin);
  }
  // Work and footprint follow from the sizes: 2 m n k flops.
  const auto k = plan.resolve(5);
  EXPECT_DOUBLE_EQ(workload_flops(k), 2.0 * 256 * 60 * 64);
  EXPECT_DOUBLE_EQ(footprint_bytes(k), 2.0 * (256 * 64 + 64 * 60 + 2 * 256 * 60));
}

TEST(JobPlan, ParamsAndDescribePoint) {
  const job_plan plan(gemm_job(), {});
  using params = std::vector<std::pair<std::string, std::int64_t>>;
  EXPECT_EQ(plan.params(0), (params{{"M", 128}, {"N", 10}}));
  EXPECT_EQ(plan.params(4), (params{{"M", 256}, {"N", 20}}));
  EXPECT_EQ(plan.describe_point(4), "point 4 (M=256, N=20)");
  EXPECT_EQ(plan.describe_point(0), "point 0 (M=128, N=10)");

  job_spec single = gemm_job();
  std::get<gemm_spec>(single.kernel).m = int_expr::of(8);
  std::get<gemm_spec>(single.kernel).n = int_expr::of(8);
  single.sweep = sweep();
  const job_plan one(std::move(single), {});
  EXPECT_EQ(one.size(), 1u);
  EXPECT_TRUE(one.params(0).empty());
  EXPECT_EQ(one.describe_point(0), "point 0");
  EXPECT_EQ(std::get<gemm_instance>(one.resolve(0)).m, 8);
}

TEST(JobPlan, ResolvesStream) {
  const job_plan plan(stream_job(), {});
  ASSERT_EQ(plan.size(), 3u);
  const std::int64_t expected[] = {1024, 4096, 16384};
  for (std::uint64_t i = 0; i < 3; ++i) {
    const auto s = std::get<stream_instance>(plan.resolve(i));
    EXPECT_EQ(s.n, expected[i]);
    EXPECT_EQ(s.variant, stream_variant::copy);
    EXPECT_EQ(s.type, dtype::bf16);
    EXPECT_DOUBLE_EQ(s.scalar, 7.0);
  }
  // copy moves 2 arrays of bf16 and does no arithmetic.
  const auto k = plan.resolve(1);
  EXPECT_DOUBLE_EQ(workload_bytes(k), 2.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(workload_flops(k), 0.0);
}

TEST(JobPlan, ResolvesCustomGridWithCeil) {
  const job_plan plan(custom_job(), {});
  ASSERT_EQ(plan.size(), 4u);
  const std::int64_t grids[] = {1, 2, 4, 4};
  const std::int64_t ns[] = {256, 257, 1000, 1024};
  const auto& spec_kernel = std::get<custom_spec>(plan.spec().kernel).kernel;
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto c = std::get<custom_instance>(plan.resolve(i));
    const std::int64_t n = ns[i];
    EXPECT_EQ(c.launch.grid, (std::array<std::int64_t, 3>{grids[i], 1, 1})) << "N=" << n;
    EXPECT_EQ(c.launch.block, (std::array<std::int64_t, 3>{256, 1, 1}));
    EXPECT_EQ(c.launch.shared_bytes, 4 * std::min<std::int64_t>(n, 512));
    EXPECT_EQ(c.launch.kernel, &spec_kernel);  // points into the plan's spec, not a copy
    ASSERT_EQ(c.args.size(), 4u);
    EXPECT_EQ(c.args[0].name, "n");
    EXPECT_FALSE(c.args[0].pointer);
    EXPECT_DOUBLE_EQ(c.args[0].value, double(n));
    EXPECT_DOUBLE_EQ(c.args[1].value, double(n) / 8);  // f32 scalars may be fractional
    EXPECT_TRUE(c.args[2].pointer);
    EXPECT_EQ(c.args[2].count, n);
    EXPECT_EQ(c.args[3].count, 2 * n);
    EXPECT_TRUE(c.args[3].output);
    EXPECT_EQ(c.flops, 2.0 * double(n));
    EXPECT_EQ(c.bytes, 12.5);
    ASSERT_TRUE(c.reference.has_value());
    const auto& ref = std::get<custom_launch>(*c.reference);
    EXPECT_EQ(ref.grid[0], (n + 127) / 128);
    EXPECT_EQ(ref.block[0], 128);
    // Footprint: x once, the output y twice (its reference copy).
    EXPECT_DOUBLE_EQ(footprint_bytes(c), 4.0 * double(n) + 2 * 4.0 * double(2 * n));
  }
}

TEST(JobPlan, ResolvingOutOfOrderGivesEachPointsOwnValues) {
  const job_plan plan(gemm_job(), {});
  EXPECT_EQ(std::get<gemm_instance>(plan.resolve(5)).m, 256);
  EXPECT_EQ(std::get<gemm_instance>(plan.resolve(0)).m, 128);
  EXPECT_EQ(std::get<gemm_instance>(plan.resolve(5)).n, 60);
  EXPECT_EQ(std::get<gemm_instance>(plan.resolve(5)).n, 60);
  EXPECT_EQ(std::get<gemm_instance>(plan.resolve(3)).n, 20);
}

TEST(JobPlan, MovedPlanStillResolves) {
  job_plan plan(custom_job(), {});
  job_plan moved = std::move(plan);
  const auto c = std::get<custom_instance>(moved.resolve(2));
  EXPECT_EQ(c.launch.grid[0], 4);
  EXPECT_EQ(c.launch.kernel, &std::get<custom_spec>(moved.spec().kernel).kernel);
}

TEST(JobPlan, ConstructorRejectsBadExpressions) {
  job_spec spec = custom_job();
  std::get<custom_spec>(spec.kernel).kernel.grid[1] = ex("ceil(X)");
  try {
    const job_plan plan(std::move(spec), {});
    FAIL() << "compiled";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "kernel.grid[1]");
    EXPECT_NE(e.reason().find("sweep parameters: N"), std::string::npos) << e.reason();
  }
  job_spec arg = custom_job();
  std::get<custom_spec>(arg.kernel).args[2].count = ex("N +");
  try {
    const job_plan plan(std::move(arg), {});
    FAIL() << "compiled";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "kernel.args[2].count");
  }
}

// The plan_error resolve(index) throws.
plan_error error_at(const job_plan& plan, std::uint64_t index) {
  try {
    (void)plan.resolve(index);
  } catch (const plan_error& e) {
    return e;
  }
  ADD_FAILURE() << "point " << index << " resolved";
  return plan_error("", "");
}

// A scalar argument's value must be one its type holds: integers within their range, floats
// finite in theirs (a kernel would get infinity where the spec says a number).
TEST(JobPlan, ScalarValuesMustFitTheirType) {
  const auto reason_of = [](dtype t, const std::string& value) -> std::string {
    job_spec spec = custom_job({256});
    std::get<custom_spec>(spec.kernel).args[0] = scalar("s", t, value);
    const job_plan plan(std::move(spec), {});
    try {
      (void)plan.resolve(0);
    } catch (const plan_error& e) {
      EXPECT_EQ(e.field(), "kernel.args[0].value");
      return e.reason();
    }
    return "resolved";
  };
  EXPECT_NE(reason_of(dtype::f32, "1e300").find("beyond the largest f32 (3.40282e+38)"),
            std::string::npos)
      << reason_of(dtype::f32, "1e300");
  EXPECT_NE(reason_of(dtype::f16, "-70000").find("beyond the largest f16 (65504)"),
            std::string::npos);
  EXPECT_NE(reason_of(dtype::bf16, "1e39").find("beyond the largest bf16"), std::string::npos);
  EXPECT_NE(reason_of(dtype::i8, "128").find("out of range for i8"), std::string::npos);
  EXPECT_NE(reason_of(dtype::u8, "256").find("out of range for u8"), std::string::npos);
  EXPECT_NE(reason_of(dtype::u8, "-1").find("out of range for u8"), std::string::npos);
  EXPECT_EQ(reason_of(dtype::f32, "3e38"), "resolved");
  EXPECT_EQ(reason_of(dtype::f16, "65504"), "resolved");
  EXPECT_EQ(reason_of(dtype::f64, "1e300"), "resolved");
  EXPECT_EQ(reason_of(dtype::i8, "-128"), "resolved");
  EXPECT_EQ(reason_of(dtype::u8, "255"), "resolved");
}

TEST(JobPlan, InvalidValuesNameFieldAndPoint) {
  job_spec spec = custom_job({256, 100000});
  auto& c = std::get<custom_spec>(spec.kernel);
  c.args[0] = scalar("n", dtype::i32, "N*N*N");  // 1e15 is out of range for i32
  const job_plan plan(std::move(spec), {});
  EXPECT_NO_THROW((void)plan.resolve(0));
  const auto e = error_at(plan, 1);
  EXPECT_EQ(e.field(), "kernel.args[0].value");
  EXPECT_NE(e.reason().find("out of range for i32"), std::string::npos) << e.reason();
  EXPECT_NE(e.reason().find("point 1 (N=100000)"), std::string::npos) << e.reason();

  job_spec frac = custom_job({256, 257});
  std::get<custom_spec>(frac.kernel).args[0] = scalar("n", dtype::i32, "N/2");
  const auto e2 = error_at(job_plan(std::move(frac), {}), 1);
  EXPECT_EQ(e2.field(), "kernel.args[0].value");
  EXPECT_NE(e2.reason().find("not an integer"), std::string::npos) << e2.reason();

  job_spec neg = custom_job({256});
  std::get<custom_spec>(neg.kernel).flops = nx("100 - N");
  const auto e3 = error_at(job_plan(std::move(neg), {}), 0);
  EXPECT_EQ(e3.field(), "kernel.flops");
  EXPECT_NE(e3.reason().find("is negative"), std::string::npos) << e3.reason();

  plan_limits small;
  small.max_shared_bytes = 1024;
  const auto e4 = error_at(job_plan(custom_job({1024}), small), 0);
  EXPECT_EQ(e4.field(), "kernel.shared_bytes");
  EXPECT_NE(e4.reason().find("at most 1024"), std::string::npos) << e4.reason();
}

}  // namespace
}  // namespace kernelscan

namespace kernelscan {
namespace {

TEST(JobPlan, SweepParametersAreSubstitutedIntoDefineOptions) {
  job_spec spec = custom_job({256, 1024});
  auto& c = std::get<custom_spec>(spec.kernel);
  c.kernel.compile_options = {"-O3", "-DTILE=T", "-DUNROLL=4", "-DN_VALUE=N", "-DT"};
  std::get<custom_kernel>(*c.reference).compile_options = {"-DTILE=T"};
  spec.sweep = sweep({{"N", {256, 1024}}, {"T", {16, 32}}});
  const job_plan plan(std::move(spec), {});
  const auto& original = std::get<custom_spec>(plan.spec().kernel).kernel;

  const auto at = [&](std::uint64_t i) { return std::get<custom_instance>(plan.resolve(i)); };
  // Points: (256, 16), (256, 32), (1024, 16), (1024, 32).
  const auto p0 = at(0), p1 = at(1), p3 = at(3);
  EXPECT_EQ(p0.launch.kernel->compile_options,
            (std::vector<std::string>{"-O3", "-DTILE=16", "-DUNROLL=4", "-DN_VALUE=256", "-DT"}));
  EXPECT_EQ(p3.launch.kernel->compile_options,
            (std::vector<std::string>{"-O3", "-DTILE=32", "-DUNROLL=4", "-DN_VALUE=1024", "-DT"}));
  EXPECT_EQ(p1.launch.kernel->source, original.source);
  EXPECT_EQ(p1.launch.kernel->entry, original.entry);
  // The spec keeps what the user wrote; one copy per distinct set of options.
  EXPECT_EQ(original.compile_options[1], "-DTILE=T");
  EXPECT_EQ(at(1).launch.kernel, p1.launch.kernel);
  EXPECT_NE(p0.launch.kernel, p1.launch.kernel);
  const auto& ref = std::get<custom_launch>(*p1.reference);
  EXPECT_EQ(ref.kernel->compile_options, std::vector<std::string>{"-DTILE=32"});
}

TEST(JobPlan, WithoutSubstitutionTheSpecsKernelIsUsed) {
  job_spec spec = custom_job();
  std::get<custom_spec>(spec.kernel).kernel.compile_options = {"-DTILE=16", "-DM=X"};
  const job_plan plan(std::move(spec), {});
  EXPECT_EQ(std::get<custom_instance>(plan.resolve(0)).launch.kernel,
            &std::get<custom_spec>(plan.spec().kernel).kernel);
}

TEST(JobPlan, SubstitutedOptionsAreBoundedInNumber) {
  job_spec spec = custom_job({256});
  std::get<custom_spec>(spec.kernel).kernel.compile_options = {"-DTILE=T"};
  std::vector<std::int64_t> tiles;
  for (std::int64_t t = 1; t <= 65; ++t)
    tiles.push_back(t);
  spec.sweep = sweep({{"N", {256}}, {"T", tiles}});
  const job_plan plan(std::move(spec), {});
  try {
    plan.validate_all();
    FAIL() << "65 compilations accepted";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "kernel.compile_options");
    EXPECT_NE(e.reason().find("more than 64 different values"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("point 64 (N=256, T=65)"), std::string::npos) << e.reason();
  }
}

// Every field is checked at every point before a job is accepted: a sweep whose points times
// the characters of its expressions pass a billion is refused before any is checked, and one
// just under is checked whole.
TEST(JobPlan, ExpressionsTooMuchToCheckAtEveryPointAreRefused) {
  // Sixty scalar arguments of a thousand characters each.
  const std::string value = "M+" + std::string(997, ' ') + "N";
  const auto job = [&](std::int64_t points) {
    job_spec spec = custom_job({256});
    auto& c = std::get<custom_spec>(spec.kernel);
    for (int i = 0; i < 60; ++i)
      c.args.push_back(scalar("s" + std::to_string(i), dtype::f32, value));
    std::vector<std::int64_t> m(static_cast<std::size_t>(points));
    for (std::int64_t i = 0; i < points; ++i)
      m[static_cast<std::size_t>(i)] = i;
    spec.sweep = sweep({{"N", {256}}, {"M", m}});
    return spec;
  };
  // The custom job's own: N, N/8, N, 2*N, ceil(N/256), 4*min(N, 512), 2*N, cdiv(N, 128).
  const std::string own = "NN/8N2*Nceil(N/256)4*min(N, 512)2*Ncdiv(N, 128)";
  const std::int64_t chars = std::int64_t(own.size() + 60 * value.size());
  const std::int64_t most = std::int64_t(1e9) / chars;
  const job_plan over(job(most + 1), {});
  try {
    over.validate_all();
    FAIL() << "accepted";
  } catch (const plan_error& e) {
    EXPECT_EQ(e.field(), "sweep");
    EXPECT_NE(e.reason().find("too much to check at every point"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find(std::to_string(most + 1) + " points and " + std::to_string(chars) +
                              " characters"),
              std::string::npos)
        << e.reason();
  }
  const job_plan under(job(most), {});
  EXPECT_NO_THROW(under.validate_all());
}

TEST(JobPlan, EveryExpressionThatDoesNotCompileIsReported) {
  job_spec spec = custom_job();
  auto& c = std::get<custom_spec>(spec.kernel);
  c.kernel.grid[1] = ex("ceil(X)");
  c.args[2].count = ex("N +");
  c.flops = nx("Y*2");
  try {
    const job_plan plan(std::move(spec), {});
    FAIL() << "compiled";
  } catch (const plan_error& e) {
    ASSERT_EQ(e.problems().size(), 3u) << e.what();
    EXPECT_EQ(e.problems()[0].field, "kernel.grid[1]");
    EXPECT_EQ(e.problems()[1].field, "kernel.args[2].count");
    EXPECT_EQ(e.problems()[2].field, "kernel.flops");
    EXPECT_NE(e.problems()[2].reason.find("unknown name Y (sweep parameters: N)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kernelscan
