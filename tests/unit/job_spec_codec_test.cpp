#include "api/job_spec_codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kernelscan {
namespace {

json gemm_body() {
  return parse_json(R"js({
    "kernel": {"op": "gemm", "m": "M", "n": "N", "k": 512, "dtype": "f16"},
    "sweep": {"M": [128, 256], "N": {"from": 64, "to": 256, "mul": 2}}
  })js");
}

json stream_body() {
  return parse_json(R"js({
    "name": "bandwidth",
    "labels": {"team": "perf", "run.id": "a-1"},
    "engine": "mock",
    "device": 1,
    "priority": 5,
    "kernel": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f64", "scalar": 2.5},
    "sweep": {"N": {"from": 1024, "to": 4096, "step": 1024}},
    "timing": {"l2": "hot", "warmup": 1, "min_samples": 20, "max_samples": 500,
               "min_time_ms": 2.5, "max_time_ms": 50, "target_rel_noise": 0.01},
    "verify": {"trials": 0, "atol": 0.5},
    "mock": {"delay_ms": 1.5},
    "seed": 42
  })js");
}

json custom_body() {
  return parse_json(R"js({
    "name": "saxpy",
    "kernel": {
      "op": "custom",
      "source": "__global__ void saxpy(int n, float a, const float* x, float* y) {}",
      "entry": "saxpy",
      "block": [256],
      "grid": ["ceil(N/256)"],
      "shared_bytes": "4*B",
      "compile_options": ["-O3", "-DN=4", "-DUSE_FMA"],
      "args": [
        {"name": "n", "type": "i32", "value": "N"},
        {"name": "a", "type": "f32", "value": 2.5},
        {"name": "x", "type": "f32*", "count": "N", "init": "arange"},
        {"name": "y", "type": "f32*", "count": "N", "output": true}
      ],
      "flops": "2*N",
      "bytes": 1.5e3,
      "reference": {
  "op" : "stream", "variant" : "scale", "n" : "N", "scalar" : 2.5, "b" : "y", "c" : "x"}
    },
    "sweep": {
  "N" : [ 1024, 4096 ], "B" : [ 1, 2 ]
}
})js");
}

// A custom kernel computing C = A B, with a gemm reference bound to its buffers.
json custom_gemm_body() {
  return parse_json(R"js({
    "kernel": {
      "op": "custom",
      "source": "__global__ void mm() {}",
      "entry": "mm",
      "block": [16, 16],
      "grid": ["cdiv(M,16)", "cdiv(M,16)"],
      "args": [
        {"name": "A", "type": "f32*", "count": "M*M"},
        {"name": "B", "type": "f32*", "count": "M*M"},
        {"name": "C", "type": "f32*", "count": "M*M", "output": true},
        {"name": "h", "type": "f16*", "count": "M*M"},
        {"name": "m", "type": "i32", "value": "M"}
      ],
      "reference": {
  "op" : "gemm", "m" : "M", "n" : "M", "k" : "M", "a" : "A", "b" : "B", "c" : "C"}
    },
    "sweep": {
  "M" : [ 16, 64 ]
}
})js");
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

std::string dump(const std::vector<field_error>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += "\n  [" + e.field + "] " + e.message;
  return out;
}

// Passes when parsing `body` throws a validation_error with an entry for exactly `field` whose
// message contains `says`.
::testing::AssertionResult rejects(const json& body, const std::string& field,
                                   const std::string& says, const spec_limits& limits = {}) {
  const auto errors = errors_of(body, limits);
  for (const auto& e : errors) {
    if (e.field == field) {
      if (e.message.find(says) != std::string::npos) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure()
             << "error for " << field << " says \"" << e.message << "\", not \"" << says << "\"";
    }
  }
  return ::testing::AssertionFailure()
         << "no error for field \"" << field << "\"; got" << dump(errors);
}

// The same for validation_error thrown by `fn`.
template <class F>
::testing::AssertionResult throws_for(F&& fn, const std::string& field, const std::string& says) {
  try {
    fn();
  } catch (const validation_error& e) {
    for (const auto& err : e.errors()) {
      if (err.field == field && err.message.find(says) != std::string::npos) {
        return ::testing::AssertionSuccess();
      }
    }
    return ::testing::AssertionFailure()
           << "no error [" << field << "] \"" << says << "\"; got" << dump(e.errors());
  }
  return ::testing::AssertionFailure() << "no validation_error";
}

// --- valid specs -------------------------------------------------------------------------------

TEST(JobSpecCodec, ParsesGemmAndFillsDefaults) {
  const auto spec = parse_job_spec(gemm_body(), {});
  EXPECT_EQ(spec.name, "gemm sweep");
  EXPECT_TRUE(spec.labels.empty());
  EXPECT_EQ(spec.engine, engine_kind::any);
  EXPECT_FALSE(spec.device.has_value());
  EXPECT_EQ(spec.priority, 0);
  EXPECT_FALSE(spec.seed.has_value());
  EXPECT_EQ(spec.timing, timing_options{});
  EXPECT_EQ(spec.timing.l2, l2_mode::cold);
  EXPECT_EQ(spec.timing.warmup, 3);
  EXPECT_EQ(spec.timing.min_samples, 10);
  EXPECT_EQ(spec.timing.max_samples, 100000);
  EXPECT_DOUBLE_EQ(spec.timing.min_time_ms, 10.0);
  EXPECT_DOUBLE_EQ(spec.timing.max_time_ms, 2000.0);
  EXPECT_DOUBLE_EQ(spec.timing.target_rel_noise, 0.005);
  EXPECT_EQ(spec.verify.trials, 3);
  EXPECT_FALSE(spec.verify.atol.has_value());
  EXPECT_FALSE(spec.verify.rtol.has_value());
  EXPECT_EQ(spec.mock.fault, mock_fault::none);
  EXPECT_DOUBLE_EQ(spec.mock.delay_ms, 0.0);

  const auto& g = std::get<gemm_spec>(spec.kernel);
  EXPECT_EQ(g.m, (int_expr{"M", std::nullopt}));
  EXPECT_EQ(g.n, (int_expr{"N", std::nullopt}));
  EXPECT_EQ(g.k, int_expr::of(512));
  EXPECT_EQ(g.type, dtype::f16);
  EXPECT_EQ(g.layout_a, layout::row);
  EXPECT_EQ(g.layout_b, layout::row);
  EXPECT_DOUBLE_EQ(g.alpha, 1.0);
  EXPECT_DOUBLE_EQ(g.beta, 0.0);
  EXPECT_EQ(g.impl, gemm_impl::library);
  EXPECT_TRUE(g.bind_a.empty());

  ASSERT_EQ(spec.sweep.parameters().size(), 2u);
  EXPECT_EQ(spec.sweep.parameters()[0].name, "M");
  EXPECT_EQ(spec.sweep.parameters()[0].values, (std::vector<std::int64_t>{128, 256}));
  EXPECT_EQ(spec.sweep.parameters()[1].name, "N");
  EXPECT_EQ(spec.sweep.parameters()[1].values, (std::vector<std::int64_t>{64, 128, 256}));
  EXPECT_EQ(spec.sweep.size(), 6u);
}

TEST(JobSpecCodec, ParsesStream) {
  const auto spec = parse_job_spec(stream_body(), {});
  EXPECT_EQ(spec.name, "bandwidth");
  EXPECT_EQ(spec.labels, (std::map<std::string, std::string>{{"team", "perf"}, {"run.id", "a-1"}}));
  EXPECT_EQ(spec.engine, engine_kind::mock);
  EXPECT_EQ(spec.device, 1);
  EXPECT_EQ(spec.priority, 5);
  EXPECT_EQ(spec.seed, 42u);
  const auto& s = std::get<stream_spec>(spec.kernel);
  EXPECT_EQ(s.variant, stream_variant::triad);
  EXPECT_EQ(s.type, dtype::f64);
  EXPECT_DOUBLE_EQ(s.scalar, 2.5);
  EXPECT_EQ(spec.sweep.parameters()[0].values, (std::vector<std::int64_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(spec.timing.l2, l2_mode::hot);
  EXPECT_EQ(spec.timing.warmup, 1);
  EXPECT_EQ(spec.timing.min_samples, 20);
  EXPECT_EQ(spec.timing.max_samples, 500);
  EXPECT_DOUBLE_EQ(spec.timing.min_time_ms, 2.5);
  EXPECT_DOUBLE_EQ(spec.timing.max_time_ms, 50.0);
  EXPECT_DOUBLE_EQ(spec.timing.target_rel_noise, 0.01);
  EXPECT_EQ(spec.verify.trials, 0);
  EXPECT_EQ(spec.verify.atol, 0.5);
  EXPECT_DOUBLE_EQ(spec.mock.delay_ms, 1.5);
}

TEST(JobSpecCodec, ParsesCustom) {
  const auto spec = parse_job_spec(custom_body(), {});
  const auto& c = std::get<custom_spec>(spec.kernel);
  EXPECT_EQ(c.kernel.language, kernel_language::hip);
  EXPECT_EQ(c.kernel.entry, "saxpy");
  EXPECT_EQ(c.kernel.block[0], int_expr::of(256));
  EXPECT_EQ(c.kernel.block[1], int_expr::of(1));
  EXPECT_EQ(c.kernel.block[2], int_expr::of(1));
  EXPECT_EQ(c.kernel.grid[0].text, "ceil(N/256)");
  EXPECT_EQ(c.kernel.shared_bytes.text, "4*B");
  EXPECT_EQ(c.kernel.compile_options, (std::vector<std::string>{"-O3", "-DN=4", "-DUSE_FMA"}));
  ASSERT_EQ(c.args.size(), 4u);
  EXPECT_FALSE(c.args[0].pointer);
  EXPECT_EQ(c.args[0].type, dtype::i32);
  EXPECT_EQ(c.args[0].value.text, "N");
  EXPECT_EQ(c.args[1].value.literal, 2.5);
  EXPECT_TRUE(c.args[2].pointer);
  EXPECT_EQ(c.args[2].init, arg_init::arange);
  EXPECT_FALSE(c.args[2].output);
  EXPECT_TRUE(c.args[3].output);
  EXPECT_EQ(c.args[3].init, arg_init::none);
  ASSERT_TRUE(c.flops.has_value());
  EXPECT_EQ(c.flops->text, "2*N");
  ASSERT_TRUE(c.bytes.has_value());
  EXPECT_EQ(c.bytes->literal, 1500.0);
  ASSERT_TRUE(c.reference.has_value());
  const auto& ref = std::get<stream_spec>(*c.reference);
  EXPECT_EQ(ref.variant, stream_variant::scale);
  EXPECT_EQ(ref.bind_b, "y");
  EXPECT_EQ(ref.bind_c, "x");
  EXPECT_TRUE(ref.bind_a.empty());
  EXPECT_EQ(spec.name, "saxpy");

  const auto gemm_ref = parse_job_spec(custom_gemm_body(), {});
  const auto& g = std::get<gemm_spec>(*std::get<custom_spec>(gemm_ref.kernel).reference);
  EXPECT_EQ(g.bind_a, "A");
  EXPECT_EQ(g.bind_b, "B");
  EXPECT_EQ(g.bind_c, "C");
}

// A custom reference without a language is in its kernel's: an OpenCL kernel's reference is
// OpenCL C, checked as such, and says so in its canonical form.
TEST(JobSpecCodec, ACustomReferenceTakesItsKernelsLanguage) {
  json body = custom_body();
  body["kernel"]["language"] = "opencl";
  body["kernel"]["source"] =
      "__kernel void saxpy(int n, float a, __global const float* x, "
      "__global float* y) {}";
  body["kernel"]["compile_options"] = json::array();
  body["kernel"].erase("shared_bytes");
  body["sweep"].erase("B");
  body["kernel"]["reference"] = {{"op", "custom"},
                                 {"source",
                                  "__kernel void ref(int n, float a, __global const "
                                  "float* x, __global float* y) {}"},
                                 {"entry", "ref"},
                                 {"block", {64}},
                                 {"grid", {"ceil(N/64)"}}};
  const auto spec = parse_job_spec(body, {});
  const auto& ref = std::get<custom_kernel>(*std::get<custom_spec>(spec.kernel).reference);
  EXPECT_EQ(ref.language, kernel_language::opencl);
  EXPECT_EQ(to_json(spec)["kernel"]["reference"]["language"], "opencl");
  // One that names its language keeps it, and is checked as that language.
  body["kernel"]["reference"]["language"] = "hip";
  body["kernel"]["reference"]["source"] = "#include <cuda_runtime.h>\n__global__ void ref() {}";
  EXPECT_TRUE(rejects(body, "kernel.reference.source", "cuda_runtime.h"));
  // Without a language of its own, a HIP kernel's reference is HIP, as before.
  const auto hip = parse_job_spec(custom_body(), {});
  EXPECT_EQ(std::get<custom_spec>(hip.kernel).kernel.language, kernel_language::hip);
}

TEST(JobSpecCodec, CanonicalJsonRoundTrips) {
  for (const json& body : {gemm_body(), stream_body(), custom_body(), custom_gemm_body()}) {
    const auto spec = parse_job_spec(body, {});
    const json canonical = to_json(spec);
    const auto again = parse_job_spec(canonical, spec_limits::stored());
    EXPECT_TRUE(again == spec) << canonical.dump(2);
    // The canonical form is a fixed point.
    EXPECT_EQ(to_json(again), canonical);
  }
}

TEST(JobSpecCodec, CanonicalJsonFillsDefaultsAndExpandsRanges) {
  const json j = to_json(parse_job_spec(gemm_body(), {}));
  EXPECT_EQ(j["name"], "gemm sweep");
  EXPECT_EQ(j["engine"], "auto");
  EXPECT_EQ(j["device"], "any");
  EXPECT_EQ(j["priority"], 0);
  EXPECT_EQ(j["kernel"]["layout_a"], "row");
  EXPECT_EQ(j["kernel"]["impl"], "library");
  EXPECT_EQ(j["kernel"]["k"], 512);
  EXPECT_EQ(j["kernel"]["m"], "M");
  EXPECT_EQ(j["sweep"]["N"], json::array({64, 128, 256}));
  EXPECT_EQ(j["timing"]["min_samples"], 10);
  EXPECT_EQ(j["timing"]["l2"], "cold");
  EXPECT_EQ(j["verify"]["trials"], 3);
  EXPECT_TRUE(j["verify"]["atol"].is_null());
  EXPECT_EQ(j["mock"]["fault"], "none");
  EXPECT_FALSE(j.contains("seed"));
  // Sweep parameters keep the order the user wrote, not alphabetical order.
  const json reordered = parse_json(R"js({"kernel": {"op": "gemm", "m": "Z", "n": "A", "k": 8},
                                        "sweep": {"Z": [1], "A": [2]}})js");
  const json out = to_json(parse_job_spec(reordered, {}));
  EXPECT_EQ(out["sweep"].begin().key(), "Z");
}

TEST(JobSpecCodec, IntegerLiteralScalarRoundTrips) {
  json body = custom_body();
  body["kernel"]["args"][1]["value"] = 2;
  body["kernel"]["flops"] = 1000;
  const auto spec = parse_job_spec(body, {});
  const auto again = parse_job_spec(to_json(spec), spec_limits::stored());
  EXPECT_TRUE(again == spec) << to_json(spec)["kernel"]["args"][1].dump();
}

TEST(JobSpecCodec, AcceptsDeviceAnyAndIntegralFloats) {
  json body = gemm_body();
  body["device"] = "any";
  body["priority"] = -1000;
  body["timing"] = {{"min_samples", 4.0}};
  const auto spec = parse_job_spec(body, {});
  EXPECT_FALSE(spec.device.has_value());
  EXPECT_EQ(spec.priority, -1000);
  EXPECT_EQ(spec.timing.min_samples, 4);
}

// --- bad fields --------------------------------------------------------------------------------

TEST(JobSpecCodecErrors, BodyNotAnObject) {
  EXPECT_TRUE(rejects(json::array({1, 2}), "", "must be an object"));
  EXPECT_TRUE(rejects(json("gemm"), "", "not a string"));
}

TEST(JobSpecCodecErrors, MissingKernel) {
  json body = gemm_body();
  body.erase("kernel");
  EXPECT_TRUE(rejects(body, "kernel", "is required"));
  body["kernel"] = nullptr;
  EXPECT_TRUE(rejects(body, "kernel", "is required"));
  body["kernel"] = 5;
  EXPECT_TRUE(rejects(body, "kernel", "must be an object"));
}

TEST(JobSpecCodecErrors, UnknownTopLevelField) {
  json body = gemm_body();
  body["min_samples"] = 5;
  EXPECT_TRUE(rejects(body, "min_samples", "unknown field"));
  json nested = gemm_body();
  nested["timing"] = {{"min_sample", 5}};
  EXPECT_TRUE(rejects(nested, "timing.min_sample", "unknown field"));
  json in_kernel = gemm_body();
  in_kernel["kernel"]["colour"] = "red";
  EXPECT_TRUE(rejects(in_kernel, "kernel.colour", "unknown field"));
}

TEST(JobSpecCodecErrors, UnknownOp) {
  json body = gemm_body();
  body["kernel"]["op"] = "conv";
  EXPECT_TRUE(rejects(body, "kernel.op", "\"conv\" is not one of gemm, stream, custom"));
  body["kernel"].erase("op");
  EXPECT_TRUE(rejects(body, "kernel.op", "is required"));
}

TEST(JobSpecCodecErrors, MissingM) {
  json body = gemm_body();
  body["kernel"].erase("m");
  EXPECT_TRUE(rejects(body, "kernel.m", "is required"));
}

TEST(JobSpecCodecErrors, MNotAnIntegerOrExpression) {
  json body = gemm_body();
  body["kernel"]["m"] = 1.5;
  EXPECT_TRUE(rejects(body, "kernel.m", "is 1.5, not an integer"));
  body["kernel"]["m"] = 1024.5;
  EXPECT_TRUE(rejects(body, "kernel.m", "is 1024.5, not an integer"));
  body["kernel"]["m"] = true;
  EXPECT_TRUE(rejects(body, "kernel.m", "must be an integer or an expression"));
  body["kernel"]["m"] = json::object({{"from", 1}});
  EXPECT_TRUE(rejects(body, "kernel.m", "not an object"));
  body["kernel"]["m"] = "";
  EXPECT_TRUE(rejects(body, "kernel.m", "1 to 1024 characters"));
}

TEST(JobSpecCodecErrors, DtypeNotInTheEnum) {
  json body = gemm_body();
  body["kernel"]["dtype"] = "f8";
  EXPECT_TRUE(rejects(body, "kernel.dtype", "\"f8\" is not one of f32, f16, bf16, f64"));
  // Integer types are not gemm types.
  body["kernel"]["dtype"] = "i32";
  EXPECT_TRUE(rejects(body, "kernel.dtype", "is not one of"));
}

TEST(JobSpecCodecErrors, LayoutInvalid) {
  json body = gemm_body();
  body["kernel"]["layout_b"] = "diagonal";
  EXPECT_TRUE(rejects(body, "kernel.layout_b", "\"diagonal\" is not one of row, col"));
}

TEST(JobSpecCodecErrors, EngineInvalid) {
  json body = gemm_body();
  body["engine"] = "cuda";
  EXPECT_TRUE(rejects(body, "engine", "\"cuda\" is not one of auto, mock, hip"));
}

TEST(JobSpecCodecErrors, DeviceInvalid) {
  json body = gemm_body();
  body["device"] = -1;
  EXPECT_TRUE(rejects(body, "device", "must be \"any\" or a device index"));
  body["device"] = "gpu0";
  EXPECT_TRUE(rejects(body, "device", "must be \"any\" or a device index"));
  body["device"] = 1024;
  EXPECT_TRUE(rejects(body, "device", "device index"));
}

TEST(JobSpecCodecErrors, PriorityOutOfRange) {
  json body = gemm_body();
  body["priority"] = 5000;
  EXPECT_TRUE(rejects(body, "priority", "is 5000; must be between -1000 and 1000"));
}

TEST(JobSpecCodecErrors, LabelValueNotAString) {
  json body = gemm_body();
  body["labels"] = {{"team", 5}};
  EXPECT_TRUE(rejects(body, "labels.team", "must be a string"));
}

TEST(JobSpecCodecErrors, LabelKeyInvalid) {
  json body = gemm_body();
  body["labels"] = {{"bad key", "x"}};
  EXPECT_TRUE(rejects(body, "labels.bad key", "label keys are"));
  body["labels"] = {{"ok", std::string(257, 'v')}};
  EXPECT_TRUE(rejects(body, "labels.ok", "longer than 256"));
  body["labels"] = json::array();
  EXPECT_TRUE(rejects(body, "labels", "must be an object"));
}

TEST(JobSpecCodecErrors, TheTaskLabelIsTheDaemons) {
  json body = gemm_body();
  body["labels"] = {{"task", "axpy"}};
  EXPECT_TRUE(rejects(body, "labels.task", "is the daemon's"));
  // A task's job carries it, and a stored one loads with it.
  spec_limits task;
  task.task_job = true;
  EXPECT_EQ(parse_job_spec(body, task).labels.at("task"), "axpy");
  EXPECT_EQ(parse_job_spec(body, spec_limits::stored()).labels.at("task"), "axpy");
}

TEST(JobSpecCodecErrors, TooManyLabels) {
  spec_limits limits;
  limits.max_labels = 2;
  json body = gemm_body();
  body["labels"] = {{"a", "1"}, {"b", "2"}};
  EXPECT_NO_THROW((void)parse_job_spec(body, limits));
  body["labels"]["c"] = "3";
  EXPECT_TRUE(rejects(body, "labels", "has 3 labels; the limit is 2", limits));
}

TEST(JobSpecCodecErrors, SweepNotAnObject) {
  json body = gemm_body();
  body["sweep"] = json::array({128, 256});
  EXPECT_TRUE(rejects(body, "sweep", "must be an object"));
}

TEST(JobSpecCodecErrors, SweepParameterNameNotAnIdentifier) {
  json body = gemm_body();
  body["sweep"]["2M"] = {1, 2};
  EXPECT_TRUE(rejects(body, "sweep.2M", "identifiers"));
}

TEST(JobSpecCodecErrors, SweepParameterNameReserved) {
  json body = gemm_body();
  body["sweep"]["min"] = {1, 2};
  EXPECT_TRUE(rejects(body, "sweep.min", "\"min\" is reserved"));
  json underscore = gemm_body();
  underscore["sweep"]["_pi"] = {1};
  EXPECT_TRUE(rejects(underscore, "sweep._pi", "reserved"));
}

TEST(JobSpecCodecErrors, SweepValueNotAnInteger) {
  json body = gemm_body();
  body["sweep"]["M"] = {128, 256, 2.5};
  EXPECT_TRUE(rejects(body, "sweep.M[2]", "must be an integer"));
  body["sweep"]["M"] = {128, "256"};
  EXPECT_TRUE(rejects(body, "sweep.M[1]", "not a string"));
  body["sweep"]["M"] = {128, 9007199254740993LL};
  EXPECT_TRUE(rejects(body, "sweep.M[1]", "2^53"));
}

TEST(JobSpecCodecErrors, DuplicateSweepValue) {
  json body = gemm_body();
  body["sweep"]["M"] = {128, 256, 128};
  EXPECT_TRUE(rejects(body, "sweep.M", "lists 128 twice"));
}

TEST(JobSpecCodecErrors, EmptyValueList) {
  json body = gemm_body();
  body["sweep"]["M"] = json::array();
  EXPECT_TRUE(rejects(body, "sweep.M", "has no values"));
}

TEST(JobSpecCodecErrors, NumbersTooLargeForTheirFieldAreShown) {
  json body = gemm_body();
  body["kernel"]["m"] = json::parse("99999999999999999999999999");
  EXPECT_TRUE(rejects(body, "kernel.m", "is 1e+26, outside +-2^53"));
  body = gemm_body();
  body["seed"] = json::parse("18446744073709551616");
  EXPECT_TRUE(rejects(body, "seed", "must be an integer between"));
  EXPECT_TRUE(rejects(body, "seed", "not 1.8446744073709552e+19"));
}

TEST(JobSpecCodecErrors, AListOfRefusedValuesSaysSoOncePerValue) {
  json body = gemm_body();
  body["sweep"]["M"] = {"a"};
  const auto errors = errors_of(body, {});
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "sweep.M[0]");
}

TEST(JobSpecCodecErrors, AParameterWithoutANameIsTheSweeps) {
  json body = gemm_body();
  body["sweep"][""] = {1};
  EXPECT_TRUE(rejects(body, "sweep", "has a parameter without a name"));
}

TEST(JobSpecCodecErrors, RangeToBeforeFrom) {
  json body = gemm_body();
  body["sweep"]["M"] = {{"from", 512}, {"to", 128}};
  EXPECT_TRUE(rejects(body, "sweep.M.to", "is less than from (512)"));
}

TEST(JobSpecCodecErrors, RangeWithStepAndMul) {
  json body = gemm_body();
  body["sweep"]["M"] = {{"from", 128}, {"to", 512}, {"step", 128}, {"mul", 2}};
  EXPECT_TRUE(rejects(body, "sweep.M.mul", "either step or mul"));
}

TEST(JobSpecCodecErrors, RangeFieldsChecked) {
  json body = gemm_body();
  body["sweep"]["M"] = {{"to", 512}};
  EXPECT_TRUE(rejects(body, "sweep.M.from", "is required"));
  body["sweep"]["M"] = {{"from", 0}, {"to", 512}, {"mul", 2}};
  EXPECT_TRUE(rejects(body, "sweep.M.from", "must be positive"));
  body["sweep"]["M"] = {{"from", 1}, {"to", 512}, {"stride", 2}};
  EXPECT_TRUE(rejects(body, "sweep.M.stride", "unknown field"));
}

TEST(JobSpecCodecErrors, TooManyPoints) {
  spec_limits limits;
  limits.max_points = 10;
  json body = gemm_body();
  body["sweep"] = {{"M", {1, 2, 3, 4}}, {"N", {1, 2}}};
  EXPECT_NO_THROW((void)parse_job_spec(body, limits));
  body["sweep"]["N"] = {1, 2, 3};
  EXPECT_TRUE(rejects(body, "sweep", "has 12 points; the limit is 10", limits));
}

TEST(JobSpecCodecErrors, TooManyValuesInARange) {
  spec_limits limits;
  limits.max_values_per_parameter = 100;
  json body = gemm_body();
  body["sweep"]["M"] = {{"from", 1}, {"to", 100}};
  EXPECT_NO_THROW((void)parse_job_spec(body, limits));
  body["sweep"]["M"] = {{"from", 1}, {"to", 1000000000}};
  EXPECT_TRUE(rejects(body, "sweep.M", "expands to more than 100 values", limits));
}

TEST(JobSpecCodecErrors, TimingMinSamplesZero) {
  json body = gemm_body();
  body["timing"] = {{"min_samples", 0}};
  EXPECT_TRUE(rejects(body, "timing.min_samples", "must be between 1 and"));
}

TEST(JobSpecCodecErrors, TimingMaxTimeBelowMinTime) {
  json body = gemm_body();
  body["timing"] = {{"min_time_ms", 100}, {"max_time_ms", 50}};
  EXPECT_TRUE(rejects(body, "timing.max_time_ms", "is less than min_time_ms"));
  body["timing"] = {{"min_samples", 100}, {"max_samples", 50}};
  EXPECT_TRUE(rejects(body, "timing.max_samples", "is less than min_samples (100)"));
}

TEST(JobSpecCodecErrors, TimingTargetNoiseZero) {
  json body = gemm_body();
  body["timing"] = {{"target_rel_noise", 0}};
  EXPECT_TRUE(rejects(body, "timing.target_rel_noise", "must be between"));
}

TEST(JobSpecCodecErrors, TimingOverThePointTimeLimit) {
  spec_limits limits;
  limits.max_point_time_ms = 1000;
  json body = gemm_body();
  body["timing"] = {{"max_time_ms", 1001}};
  EXPECT_TRUE(rejects(body, "timing.max_time_ms", "must be between", limits));
  body.erase("timing");
  body["mock"] = {{"delay_ms", 5000}};
  EXPECT_TRUE(rejects(body, "mock.delay_ms", "must be between", limits));
}

TEST(JobSpecCodecErrors, VerifyTrialsTooMany) {
  json body = gemm_body();
  body["verify"] = {{"trials", 101}};
  EXPECT_TRUE(rejects(body, "verify.trials", "is 101; must be between 0 and 100"));
}

TEST(JobSpecCodecErrors, NegativeAtol) {
  json body = gemm_body();
  body["verify"] = {{"atol", -0.1}};
  EXPECT_TRUE(rejects(body, "verify.atol", "must be between 0"));
}

TEST(JobSpecCodecErrors, FaultInjectionNeedsPermission) {
  json body = gemm_body();
  body["mock"] = {{"fault", "crash"}, {"fault_index", 3}};
  EXPECT_TRUE(rejects(body, "mock.fault", "fault injection is disabled"));

  spec_limits allowed;
  allowed.allow_fault_injection = true;
  const auto spec = parse_job_spec(body, allowed);
  EXPECT_EQ(spec.mock.fault, mock_fault::crash);
  EXPECT_EQ(spec.mock.fault_index, 3u);

  body["mock"]["fault"] = "none";
  EXPECT_NO_THROW((void)parse_job_spec(body, {}));
  body["mock"]["fault"] = "explode";
  EXPECT_TRUE(rejects(body, "mock.fault", "is not one of none, crash, hang, abort", allowed));
}

TEST(JobSpecCodecErrors, CustomWithoutSource) {
  json body = custom_body();
  body["kernel"].erase("source");
  EXPECT_TRUE(rejects(body, "kernel.source", "is required"));
}

TEST(JobSpecCodecErrors, CustomEmptySource) {
  json body = custom_body();
  body["kernel"]["source"] = " \n\t ";
  EXPECT_TRUE(rejects(body, "kernel.source", "is empty"));
}

TEST(JobSpecCodecErrors, CustomSourceTooLong) {
  spec_limits limits;
  limits.max_source_bytes = 64;
  json body = custom_body();
  body["kernel"]["source"] = std::string(64, 'x');
  EXPECT_NO_THROW((void)parse_job_spec(body, limits));
  body["kernel"]["source"] = std::string(65, 'x');
  EXPECT_TRUE(rejects(body, "kernel.source", "is 65 bytes long; the limit is 64", limits));
}

TEST(JobSpecCodecErrors, EntryNotAnIdentifier) {
  json body = custom_body();
  body["kernel"]["entry"] = "my-kernel";
  EXPECT_TRUE(rejects(body, "kernel.entry", "\"my-kernel\" is not an identifier"));
}

TEST(JobSpecCodecErrors, BlockWithFourDims) {
  json body = custom_body();
  body["kernel"]["block"] = {8, 8, 4, 1};
  EXPECT_TRUE(rejects(body, "kernel.block", "1 to 3 sizes"));
  body["kernel"]["block"] = json::array();
  EXPECT_TRUE(rejects(body, "kernel.block", "1 to 3 sizes"));
  body["kernel"].erase("block");
  EXPECT_TRUE(rejects(body, "kernel.block", "is required"));
}

TEST(JobSpecCodecErrors, GridEntryBoolean) {
  json body = custom_body();
  body["kernel"]["grid"] = {true};
  EXPECT_TRUE(rejects(body, "kernel.grid[0]", "not a boolean"));
  body["kernel"]["grid"] = {16, 2.5};
  EXPECT_TRUE(rejects(body, "kernel.grid[1]", "is 2.5, not an integer"));
}

TEST(JobSpecCodecErrors, ArgsMissing) {
  json body = custom_body();
  body["kernel"].erase("args");
  EXPECT_TRUE(rejects(body, "kernel.args", "is required"));
  body["kernel"]["args"] = json::array();
  EXPECT_TRUE(rejects(body, "kernel.args", "must be a list of 1 to 64 arguments"));
}

TEST(JobSpecCodecErrors, DuplicateArgName) {
  json body = custom_body();
  body["kernel"]["args"][1]["name"] = "n";
  EXPECT_TRUE(rejects(body, "kernel.args[1].name", "\"n\" is used by an earlier argument"));
}

TEST(JobSpecCodecErrors, BufferArgWithoutCount) {
  json body = custom_body();
  body["kernel"]["args"][1] = {{"name", "buf"}, {"type", "f32*"}};
  EXPECT_TRUE(rejects(body, "kernel.args[1].count", "is required for a buffer argument"));
}

TEST(JobSpecCodecErrors, ScalarArgWithCount) {
  json body = custom_body();
  body["kernel"]["args"][0]["count"] = 4;
  EXPECT_TRUE(rejects(body, "kernel.args[0].count", "is for buffer arguments"));
  json no_value = custom_body();
  no_value["kernel"]["args"][1].erase("value");
  EXPECT_TRUE(rejects(no_value, "kernel.args[1].value", "is required for a scalar argument"));
}

TEST(JobSpecCodecErrors, ArgTypeUnknown) {
  json body = custom_body();
  body["kernel"]["args"][2]["type"] = "f33*";
  EXPECT_TRUE(rejects(body, "kernel.args[2].type", "\"f33*\" is not a type"));
}

TEST(JobSpecCodecErrors, CompileOptionsAllowList) {
  json body = custom_body();
  body["kernel"]["compile_options"] = {"-DN=4", "-I/etc"};
  EXPECT_TRUE(rejects(body, "kernel.compile_options[1]", "\"-I/etc\" is not an allowed option"));
  for (const char* bad : {"-DN=$(rm)", "-D2N", "--save-temps", "-o/tmp/x", "-DN=a b"}) {
    body["kernel"]["compile_options"] = {bad};
    EXPECT_TRUE(rejects(body, "kernel.compile_options[0]", "is not an allowed option")) << bad;
  }
  body["kernel"]["compile_options"] = {"-DN=4", "-O2", "-ffast-math", "-DX", "-DV=1.5e-3"};
  const auto spec = parse_job_spec(body, {});
  EXPECT_EQ(std::get<custom_spec>(spec.kernel).kernel.compile_options.size(), 5u);
}

TEST(JobSpecCodecErrors, GemmReferenceBindingUnknownArgument) {
  json body = custom_gemm_body();
  body["kernel"]["reference"]["a"] = "Q";
  EXPECT_TRUE(rejects(body, "kernel.reference.a", "no argument is named \"Q\""));
}

TEST(JobSpecCodecErrors, GemmReferenceBindingToScalar) {
  json body = custom_gemm_body();
  body["kernel"]["reference"]["b"] = "m";
  EXPECT_TRUE(rejects(body, "kernel.reference.b", "argument \"m\" is a scalar"));
}

TEST(JobSpecCodecErrors, GemmReferenceBindingOtherDtype) {
  json body = custom_gemm_body();
  body["kernel"]["reference"]["a"] = "h";
  EXPECT_TRUE(rejects(body, "kernel.reference.a",
                      "argument \"h\" is f16 but the reference computes in f32"));
}

TEST(JobSpecCodecErrors, GemmReferenceOutputNotMarked) {
  json body = custom_gemm_body();
  body["kernel"]["reference"]["c"] = "B";
  EXPECT_TRUE(rejects(body, "kernel.reference.c", "mark it \"output\": true"));
}

TEST(JobSpecCodecErrors, ReferenceWithoutOutputArgument) {
  json body = custom_gemm_body();
  body["kernel"]["args"][2]["output"] = false;
  EXPECT_TRUE(rejects(body, "kernel.args", "needs at least one argument marked"));
}

TEST(JobSpecCodecErrors, MultipleErrorsAreAllReported) {
  json body = gemm_body();
  body["priority"] = 5000;
  body["engine"] = "cuda";
  body["kernel"]["dtype"] = "f8";
  body["timing"] = {{"min_samples", 0}};
  body["colour"] = "red";
  try {
    (void)parse_job_spec(body, {});
    FAIL() << "accepted";
  } catch (const validation_error& e) {
    const auto& errors = e.errors();
    EXPECT_EQ(errors.size(), 5u) << dump(errors);
    std::vector<std::string> fields;
    for (const auto& err : errors)
      fields.push_back(err.field);
    for (const char* f : {"priority", "engine", "kernel.dtype", "timing.min_samples", "colour"}) {
      EXPECT_NE(std::find(fields.begin(), fields.end(), f), fields.end()) << f << dump(errors);
    }
    const std::string what = e.what();
    EXPECT_NE(what.find("(and 4 more problems)"), std::string::npos) << what;
  }
}

// --- compile_plan and validate_points ----------------------------------------------------------

// A gemm M x 64 x 64 with m given by `m`, swept over M = `values` (and N = [1] if `with_n`).
job_spec gemm_spec_of(const std::string& m, const std::vector<std::int64_t>& values,
                      bool with_n = false) {
  json body = {{"kernel", {{"op", "gemm"}, {"m", m}, {"n", 64}, {"k", 64}}}};
  body["sweep"]["M"] = values;
  if (with_n) body["sweep"]["N"] = json::array({1});
  return parse_job_spec(body, spec_limits::stored());
}

TEST(CompilePlan, UnknownParameterNamesTheFieldAndTheParameters) {
  EXPECT_TRUE(throws_for([] { (void)compile_plan(gemm_spec_of("X*2", {1}, true), {}); }, "kernel.m",
                         "sweep parameters: M, N"));
  EXPECT_TRUE(throws_for([] { (void)compile_plan(gemm_spec_of("M*(2", {1}), {}); }, "kernel.m",
                         "invalid expression"));
}

TEST(CompilePlan, ValidSpecCompilesAndValidates) {
  auto plan = compile_plan(parse_job_spec(custom_body(), {}), {});
  EXPECT_EQ(plan.size(), 4u);
  EXPECT_NO_THROW(validate_points(plan));
}

TEST(ValidatePoints, NotAnIntegerAtAPointNamesThePoint) {
  const auto plan = compile_plan(gemm_spec_of("M/2", {4, 3, 8}), {});
  EXPECT_NO_THROW((void)plan.resolve(0));
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.m", "point 1 (M=3)"));
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.m", "not an integer"));
}

TEST(ValidatePoints, ValueOverMaxDimension) {
  plan_limits limits;
  limits.max_dimension = 1000;
  const auto plan = compile_plan(gemm_spec_of("M", {512, 2048}), limits);
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.m", "must be at most 1000"));
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.m", "point 1 (M=2048)"));
  // A literal over the limit is reported without a point.
  json body = {{"kernel", {{"op", "gemm"}, {"m", 64}, {"n", 5000}, {"k", 64}}}};
  const auto literal = compile_plan(parse_job_spec(body, {}), limits);
  EXPECT_TRUE(
      throws_for([&] { validate_points(literal); }, "kernel.n", "is 5000; must be at most 1000"));
  // Zero and negative sizes are invalid too.
  const auto zero = compile_plan(gemm_spec_of("M-4", {8, 4}), {});
  EXPECT_TRUE(throws_for([&] { validate_points(zero); }, "kernel.m", "must be at least 1"));
}

TEST(ValidatePoints, FootprintOverMaxPointBytes) {
  plan_limits limits;
  limits.max_point_bytes = 1 << 20;
  // f32 gemm M x 64 x 64: 4 (64 M + 4096 + 2 * 64 M) bytes; 1 MiB is crossed between M=64 and
  // M=2048.
  const auto plan = compile_plan(gemm_spec_of("M", {64, 2048}), limits);
  EXPECT_NO_THROW((void)plan.resolve(0));
  // Sizes in binary units, as the limit is set.
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel",
                         "needs 1.52 MiB of device memory (1589248 bytes), more than the limit of "
                         "1 MiB at point 1 (M=2048)"));
}

TEST(ValidatePoints, BlockThreadsOverLimit) {
  json body = custom_body();
  body["kernel"]["block"] = {32, "4*B*16"};  // 2048 threads at B=1, 4096 at B=2
  const auto plan = compile_plan(parse_job_spec(body, {}), {});
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.block",
                         "has 2048 threads per block; the limit is 1024"));
  body["kernel"]["block"] = {2048};
  const auto single = compile_plan(parse_job_spec(body, {}), {});
  EXPECT_TRUE(throws_for([&] { validate_points(single); }, "kernel.block[0]", "at most 1024"));
}

TEST(ValidatePoints, GemmReferenceBufferTooSmall) {
  json body = custom_gemm_body();
  body["kernel"]["args"][1]["count"] = "M*16";  // B needs M*M elements
  body["sweep"]["M"] = {16, 32};
  const auto plan = compile_plan(parse_job_spec(body, {}), {});
  EXPECT_NO_THROW((void)plan.resolve(0));
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.reference",
                         "gemm B (k*n) needs 1024 elements but argument \"B\" has count 512"));
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "kernel.reference", "point 1 (M=32)"));
}

// --- fitness, cache and the mock's anti-cheat knobs ----------------------------------------

TEST(JobSpecCodec, ParsesFitnessCacheAndMockKnobs) {
  json body = gemm_body();
  body["fitness"] = parse_json(R"js({"baseline": {"op": "gemm", "m": "M", "n": "N", "k": 512,
      "dtype": "f16", "impl": "builtin"}, "target_us": 20, "correctness_weight": 0.25})js");
  body["cache"] = false;
  body["mock"] = parse_json(R"js({"speedup": 3, "output": "half_written"})js");
  const auto spec = parse_job_spec(body, {});
  ASSERT_TRUE(spec.fitness.baseline);
  EXPECT_EQ(std::get<gemm_spec>(*spec.fitness.baseline).impl, gemm_impl::builtin);
  EXPECT_EQ(spec.fitness.target_us, 20);
  EXPECT_EQ(spec.fitness.correctness_weight, 0.25);
  EXPECT_FALSE(spec.cache);
  EXPECT_EQ(spec.mock.speedup, 3);
  EXPECT_EQ(spec.mock.output, "half_written");
  // The canonical form round-trips, baseline included.
  EXPECT_EQ(parse_job_spec(to_json(spec), {}), spec);
  const json canonical = to_json(parse_job_spec(gemm_body(), {}));
  EXPECT_EQ(
      canonical["fitness"],
      parse_json(R"({"baseline":null,"target_us":null,"correctness_weight":0.5,"score_cap":10})"));
  EXPECT_EQ(canonical["cache"], true);
}

TEST(JobSpecCodec, RejectsBadFitness) {
  json body = gemm_body();
  body["fitness"] = parse_json(R"({"target_us": 0})");
  EXPECT_TRUE(rejects(body, "fitness.target_us", "greater than 0"));
  body["fitness"] = parse_json(R"({"correctness_weight": 1.5})");
  EXPECT_TRUE(rejects(body, "fitness.correctness_weight", "1"));
  body["fitness"] = parse_json(R"({"score_cap": 0.5})");
  EXPECT_TRUE(rejects(body, "fitness.score_cap", "1"));
  body["fitness"] = parse_json(R"({"baseline": {"op": "gemm", "m": 1}})");
  EXPECT_TRUE(rejects(body, "fitness.baseline.n", "required"));
  body["fitness"] = parse_json(R"({"base": {}})");
  EXPECT_TRUE(rejects(body, "fitness.base", ""));
  body["fitness"] = 3;
  EXPECT_TRUE(rejects(body, "fitness", "object"));
  body = gemm_body();
  body["cache"] = "yes";
  EXPECT_TRUE(rejects(body, "cache", "true or false"));
  body = gemm_body();
  body["mock"] = parse_json(R"({"speedup": 0})");
  EXPECT_TRUE(rejects(body, "mock.speedup", ""));
  body["mock"] = parse_json(R"({"output": "garbage"})");
  EXPECT_TRUE(rejects(body, "mock.output", "not one of"));
}

TEST(JobSpecCodec, ABaselineExpressionIsCheckedAtEveryPoint) {
  json body = gemm_body();
  body["fitness"] =
      parse_json(R"({"baseline": {"op": "stream", "variant": "copy", "n": "M-200"}})");
  const auto spec = parse_job_spec(body, {});
  const auto plan = compile_plan(spec, {});
  EXPECT_TRUE(throws_for([&] { validate_points(plan); }, "fitness.baseline.n", "at least 1"));
  // Both kernels' buffers must fit together.
  body["fitness"] = parse_json(R"({"baseline": {"op": "stream", "variant": "copy", "n": 100000}})");
  plan_limits small;
  small.max_point_bytes = 1000000;  // each alone fits; together they do not
  EXPECT_TRUE(throws_for([&] { validate_points(compile_plan(parse_job_spec(body, {}), small)); },
                         "fitness.baseline", "of device memory (1200000 bytes)"));
  body["fitness"] = parse_json(R"({"baseline": {"op": "stream", "variant": "copy", "n": "Q"}})");
  EXPECT_TRUE(throws_for([&] { (void)compile_plan(parse_job_spec(body, {}), {}); },
                         "fitness.baseline.n", "Q"));
}

}  // namespace
}  // namespace kernelscan

namespace kernelscan {
namespace {

// --- sweeps mean what they say ------------------------------------------------------------------

TEST(SweepRules, AParameterNoFieldUsesIsRejected) {
  json body = gemm_body();
  body["sweep"]["TILE"] = {16, 32};
  EXPECT_TRUE(rejects(body, "sweep.TILE", "no field uses TILE"));
  // Stored specs load whatever the rule was when they were accepted.
  EXPECT_NO_THROW((void)parse_job_spec(body, spec_limits::stored()));
  // Used in an expression, or as the value of a -D compile option, it is used.
  body["kernel"]["k"] = "TILE*16";
  EXPECT_NO_THROW((void)parse_job_spec(body, {}));
  json custom = custom_body();
  custom["sweep"]["TILE"] = {16, 32};
  EXPECT_TRUE(rejects(custom, "sweep.TILE", "no field uses TILE"));
  custom["kernel"]["compile_options"] = {"-O3", "-DTILE=TILE"};
  EXPECT_NO_THROW((void)parse_job_spec(custom, {}));
  // A baseline's use counts too.
  json baseline = gemm_body();
  baseline["sweep"]["K"] = {64, 128};
  baseline["fitness"] = {{"baseline", {{"op", "gemm"}, {"m", "M"}, {"n", "N"}, {"k", "K"}}}};
  EXPECT_NO_THROW((void)parse_job_spec(baseline, {}));
}

TEST(SweepRules, EveryFailingExpressionIsListedAtOnceByName) {
  json body = custom_body();
  body["kernel"]["grid"] = {"ceil(M/16)"};
  body["kernel"]["args"][0]["value"] = "N + Q";
  body["kernel"]["flops"] = "2*N*K*X";
  body["kernel"]["block"] = {"bogus(N)"};
  body["timing"] = {{"l2", "warm"}};
  const auto errors = errors_of(body);
  EXPECT_EQ(errors.size(), 5u) << dump(errors);
  EXPECT_TRUE(
      rejects(body, "kernel.grid[0]", "\"ceil(M/16)\": unknown name M (sweep parameters: N, B)"));
  EXPECT_TRUE(rejects(body, "kernel.args[0].value", "unknown name Q (sweep parameters: N, B)"));
  EXPECT_TRUE(rejects(body, "kernel.flops", "unknown names K, X (sweep parameters: N, B)"));
  EXPECT_TRUE(rejects(body, "kernel.block[0]", "unknown function bogus (functions: "));
  EXPECT_TRUE(rejects(body, "timing.l2", "not one of"));
  for (const auto& e : errors)
    EXPECT_EQ(e.message.find("position"), std::string::npos) << e.message;
}

TEST(SweepRules, ABrokenSweepIsReportedWithoutBlamingTheExpressions) {
  json body = gemm_body();
  body["sweep"] = "M=128";
  const auto errors = errors_of(body);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "sweep");
}

TEST(SweepRules, ValidatePointsListsEveryFieldThatFails) {
  json body = gemm_body();
  body["kernel"]["m"] = "M/3";
  body["kernel"]["n"] = "N-64";
  body["kernel"]["k"] = "M*N*1000000";
  try {
    validate_points(compile_plan(parse_job_spec(body, {}), {}));
    FAIL() << "accepted";
  } catch (const validation_error& e) {
    const auto& errors = e.errors();
    ASSERT_EQ(errors.size(), 3u) << dump(errors);
    EXPECT_EQ(errors[0].field, "kernel.m");
    EXPECT_NE(errors[0].message.find("\"M/3\" is 42.6667, not an integer"), std::string::npos)
        << dump(errors);
    EXPECT_EQ(errors[1].field, "kernel.n");
    EXPECT_NE(errors[1].message.find("must be at least 1 at point 0 (M=128, N=64)"),
              std::string::npos)
        << dump(errors);
    EXPECT_EQ(errors[2].field, "kernel.k");
    EXPECT_NE(errors[2].message.find("must be at most 2147483647"), std::string::npos)
        << dump(errors);
  }
}

TEST(SweepRules, ByteLimitsReadInBinaryUnits) {
  json body = parse_json(R"({"kernel": {"op": "stream", "variant": "triad", "n": "N"},
                             "sweep": {"N": [2000000000]}})");
  plan_limits limits;
  limits.max_point_bytes = 16ull << 30;
  EXPECT_TRUE(throws_for([&] { validate_points(compile_plan(parse_job_spec(body, {}), limits)); },
                         "kernel",
                         "needs 29.8 GiB of device memory (32000000000 bytes), more than the "
                         "limit of 16 GiB at point 0 (N=2000000000)"));
}

}  // namespace
}  // namespace kernelscan
