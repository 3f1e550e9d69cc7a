// The submit pipeline without HTTP: a store in memory, a fleet of one mock device, and the
// scheduler's part played by a list of the ids it was handed.

#include "server/submit_pipeline.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>

#include "api/api_error.hpp"
#include "api/device_codec.hpp"
#include "api/field_errors.hpp"
#include "engine/device_needs.hpp"
#include "storage/sqlite_job_store.hpp"

namespace kernelscan {
namespace {

constexpr std::uint64_t k_seed = 12345;

json mock_device() {
  return json{{"index", 0},        {"engine", "mock"}, {"node", "here"},
              {"model", "MI300X"}, {"state", "idle"},  {"vendor", "AMD"},
              {"name", "mock"},    {"arch", "gfx942"}, {"memory_bytes", 1ull << 34}};
}

std::string gemm_job(const std::string& name = "gemm") {
  return json{{"name", name},
              {"engine", "mock"},
              {"kernel", {{"op", "gemm"}, {"m", "M"}, {"n", "N"}, {"k", 256}, {"dtype", "f16"}}},
              {"sweep", {{"M", {256, 512}}, {"N", {256}}}}}
      .dump();
}

struct SubmitPipeline : ::testing::Test {
  sqlite_job_store store{":memory:"};
  event_hub events;
  serve_config config;
  std::vector<json> devices{mock_device()};
  std::vector<std::int64_t> enqueued;
  submit_pipeline pipeline{
      store,
      events,
      config,
      {[this] { return devices; }, [this](std::int64_t id) { enqueued.push_back(id); }},
      [seeds = std::mt19937_64(k_seed)]() mutable { return seeds() >> 1; }};
};

TEST_F(SubmitPipeline, StoresAValidSpecWithTheDaemonsSeed) {
  const submit_result r = pipeline.submit(gemm_job(), "");
  EXPECT_TRUE(r.created);
  EXPECT_EQ(enqueued, std::vector<std::int64_t>{r.id});
  const auto rec = store.get(r.id);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, job_status::queued);
  EXPECT_EQ(rec->progress.total, 2u);
  const json spec = json::parse(rec->spec_json);
  std::mt19937_64 expected(k_seed);
  EXPECT_EQ(spec.at("seed").get<std::uint64_t>(), expected() >> 1);
  EXPECT_EQ(json::parse(r.job_text).at("id").get<std::int64_t>(), r.id);
  // The job is announced.
  const auto b = events.wait(0, event_hub::clock::now(), std::chrono::milliseconds(0));
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].type, "job");
}

TEST_F(SubmitPipeline, ReplaysAKnownIdempotencyKeyAndRefusesItForAnotherRequest) {
  const submit_result first = pipeline.submit(gemm_job(), "key-1");
  const submit_result again = pipeline.submit(gemm_job(), "key-1");
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(enqueued.size(), 1u);
  try {
    pipeline.submit(gemm_job("another"), "key-1");
    FAIL() << "a different request under a used key was accepted";
  } catch (const api_error& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_EQ(e.type(), "idempotency_conflict");
  }
}

TEST_F(SubmitPipeline, RefusesAnInvalidSpecNamingEveryField) {
  json bad = json::parse(gemm_job());
  bad["kernel"]["dtype"] = "f8";
  bad["verify"] = {{"trials", -1}};
  try {
    pipeline.submit(bad.dump(), "");
    FAIL() << "an invalid spec was accepted";
  } catch (const validation_error& e) {
    std::vector<std::string> fields;
    for (const auto& f : e.errors())
      fields.push_back(f.field);
    EXPECT_NE(std::find(fields.begin(), fields.end(), "kernel.dtype"), fields.end());
    EXPECT_NE(std::find(fields.begin(), fields.end(), "verify.trials"), fields.end());
  }
  EXPECT_TRUE(enqueued.empty());
  EXPECT_TRUE(store.list({}).empty());
}

TEST_F(SubmitPipeline, RefusesASpecNoDeviceCanRun) {
  json hip = json::parse(gemm_job());
  hip["engine"] = "hip";
  try {
    pipeline.submit(hip.dump(), "");
    FAIL() << "a job for an engine the fleet lacks was accepted";
  } catch (const validation_error& e) {
    ASSERT_EQ(e.errors().size(), 1u);
    EXPECT_EQ(e.errors()[0].field, "engine");
    EXPECT_NE(e.errors()[0].message.find("no live node has a HIP device"), std::string::npos)
        << e.errors()[0].message;
  }
  devices.clear();
  EXPECT_THROW(pipeline.submit(gemm_job(), ""), validation_error);
  EXPECT_TRUE(store.list({}).empty());
}

// A placement whose index no matching device has names the index: `device.index` where the
// placement is an object, `device` where it is the index alone, with the indices there are.
TEST_F(SubmitPipeline, AnIndexNoDeviceHasIsRefusedNamingTheIndex) {
  json second = mock_device();
  second["index"] = 1;
  devices.push_back(second);
  auto refusal = [&](const json& device) -> field_error {
    json spec = json::parse(gemm_job());
    spec["device"] = device;
    try {
      pipeline.submit(spec.dump(), "");
    } catch (const validation_error& e) {
      if (e.errors().size() == 1) return e.errors()[0];
    }
    return {"", "accepted, or refused otherwise"};
  };
  auto e = refusal({{"node", "here"}, {"index", 5}});
  EXPECT_EQ(e.field, "device.index");
  EXPECT_EQ(e.message, "no live device 5 on node \"here\", with engine mock (its devices: 0, 1)");
  e = refusal(7);
  EXPECT_EQ(e.field, "device");
  EXPECT_EQ(e.message, "no live device 7 with engine mock (its devices: 0, 1)");
  // An index there is, on a node there is not: the node is named.
  EXPECT_EQ(refusal({{"node", "elsewhere"}, {"index", 1}}).field, "device.node");
  EXPECT_TRUE(store.list({}).empty());
  json spec = json::parse(gemm_job());
  spec["device"] = {{"node", "here"}, {"index", 1}};
  EXPECT_NO_THROW(pipeline.submit(spec.dump(), ""));
}

// A fleet of a CPU without half arithmetic (CLBlast there has no f16 GEMM) and a mock GPU: an
// f16 library GEMM is refused where only the CPU could take it, and otherwise queued for the
// device that can run it, which alone may claim it.
TEST_F(SubmitPipeline, AJobGoesOnlyToDevicesWithWhatItNeeds) {
  json cpu = mock_device();
  cpu["engine"] = "opencl";
  cpu["index"] = 1;
  cpu["name"] = "pthread-x86";
  cpu["model"] = nullptr;
  device_info cpu_info;
  cpu_info.capabilities.fp16 = false;
  cpu_info.capabilities.gemm_library = "CLBlast";
  cpu_info.capabilities.gemm_library_types = {dtype::f64, dtype::f32};
  cpu["capabilities"] = to_json(cpu_info.capabilities);
  devices.push_back(cpu);

  json on_cpu = json::parse(gemm_job());
  on_cpu["engine"] = "opencl";
  try {
    pipeline.submit(on_cpu.dump(), "");
    FAIL() << "an f16 library GEMM was accepted for a device without one";
  } catch (const validation_error& e) {
    ASSERT_EQ(e.errors().size(), 1u);
    EXPECT_EQ(e.errors()[0].field, "kernel.dtype");
    EXPECT_NE(e.errors()[0].message.find("CLBlast there has no f16 GEMM (the device lacks "
                                         "cl_khr_fp16). Use impl \"builtin\""),
              std::string::npos)
        << e.errors()[0].message;
  }
  EXPECT_TRUE(store.list({}).empty());

  json anywhere = json::parse(gemm_job());
  anywhere.erase("engine");
  const auto id = pipeline.submit(anywhere.dump(), "").id;
  claim_request from_cpu{"here", 1, "opencl", "", device_lacks(cpu_info.capabilities)};
  EXPECT_FALSE(store.claim(from_cpu));
  claim_request from_gpu{"here", 0, "mock", "MI300X", 0};
  const auto claimed = store.claim(from_gpu);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->lease.job_id, id);
}

// A task over a stream copy, its held-out size 1,000,000 elements.
task_record copy_task() {
  task_record t;
  t.name = "copy";
  t.template_json = json{
      {"engine", "mock"},
      {"kernel",
       {{"op", "custom"},
        {"entry", "copy"},
        {"block", {256}},
        {"grid", {"ceil(N/256)"}},
        {"args",
         {{{"name", "out"}, {"type", "f32*"}, {"count", "N"}, {"output", true}},
          {{"name", "in"}, {"type", "f32*"}, {"count", "N"}},
          {{"name", "n"}, {"type", "i32"}, {"value", "N"}}}},
        {"reference",
         {{"op", "stream"},
          {"variant", "copy"},
          {"n", "N"},
          {"dtype", "f32"},
          {"a", "in"},
          {"c", "out"}}}}},
      {"sweep", {{"N", {4096, 8192}}}},
      {"held_out", {{"N", {1000000}}}},
      {"verify",
       {{"trials", 2}}}}.dump();
  return t;
}

const task_caller k_agent{"token:0123456789abcdef", false, false};
const task_caller k_operator{"token:fedcba9876543210", true, true};

constexpr const char* k_copy_source =
    "extern \"C\" __global__ void copy(float* out, const float* in, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) out[i] = in[i];\n}\n";

TEST_F(SubmitPipeline, ATaskSubmissionIsTheTemplateWithTheCandidateLaidOver) {
  const submit_result r =
      pipeline.submit_to_task(copy_task(), json{{"source", k_copy_source}}.dump(), "", k_agent);
  ASSERT_TRUE(r.created);
  const auto rec = store.get(r.id);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->task, "copy");
  EXPECT_EQ(rec->labels.at("task"), "copy");
  EXPECT_EQ(rec->progress.total, 3u);  // two public sizes and the held-out one
  const json spec = json::parse(rec->spec_json);
  EXPECT_EQ(spec["held_out"]["N"], json::array({1000000}));
  EXPECT_EQ(spec["cache"], false);
  EXPECT_EQ(spec["verify"]["trials"], 2);
  std::mt19937_64 expected(k_seed);
  EXPECT_EQ(spec.at("seed").get<std::uint64_t>(), expected() >> 1);

  // What a task fixes cannot be sent; a field error at the held-out size does not describe it.
  EXPECT_THROW(pipeline.submit_to_task(
                   copy_task(), json{{"source", k_copy_source}, {"sweep", json::object()}}.dump(),
                   "", k_agent),
               validation_error);
  const std::string probe =
      json{{"source", k_copy_source}, {"grid", {"N > 100000 ? 0 : ceil(N/256)"}}}.dump();
  try {
    pipeline.submit_to_task(copy_task(), probe, "", k_agent);
    FAIL() << "a grid of 0 was accepted";
  } catch (const validation_error& e) {
    ASSERT_EQ(e.errors().size(), 1u);
    EXPECT_EQ(e.errors()[0].field, "grid[0]");
    EXPECT_EQ(e.errors()[0].message.find("1000000"), std::string::npos) << e.errors()[0].message;
    EXPECT_NE(e.errors()[0].message.find("a held-out point"), std::string::npos);
  }
  try {
    pipeline.submit_to_task(copy_task(), probe, "", k_operator);  // an operator sees the point
    FAIL() << "a grid of 0 was accepted from an operator";
  } catch (const validation_error& e) {
    EXPECT_NE(e.errors()[0].message.find("N=1000000"), std::string::npos) << e.errors()[0].message;
  }

  // A retired task takes nothing new, but a retry of what it took is still answered.
  task_record retired = copy_task();
  retired.retired_ms = 1;
  const auto first =
      pipeline.submit_to_task(copy_task(), json{{"source", k_copy_source}}.dump(), "k", k_agent);
  const auto again =
      pipeline.submit_to_task(retired, json{{"source", k_copy_source}}.dump(), "k", k_agent);
  EXPECT_EQ(again.id, first.id);
  EXPECT_FALSE(again.created);
  try {
    pipeline.submit_to_task(retired, json{{"source", k_copy_source}}.dump(), "", k_agent);
    FAIL() << "a retired task took a submission";
  } catch (const api_error& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_EQ(e.type(), "task_retired");
  }
}

// A task's bound on each agent's submissions: counted per agent, in its window, in the store's
// transaction; an operator is not held by it, and a retry of an accepted one is still answered.
TEST_F(SubmitPipeline, ATaskTakesAtMostItsBoundFromEachAgent) {
  task_record task = copy_task();
  json t = json::parse(task.template_json);
  t["submissions"] = {{"per_agent", 2}, {"window_hours", 24}};
  task.template_json = t.dump();
  const std::string body = json{{"source", k_copy_source}}.dump();
  const task_caller other{"address:10.0.0.7", false, false};

  EXPECT_EQ(pipeline.submissions_left(task, k_agent.agent), (json{{"used", 0}, {"remaining", 2}}));
  const auto first = pipeline.submit_to_task(task, body, "first", k_agent);
  pipeline.submit_to_task(task, body, "", k_agent);
  EXPECT_EQ(pipeline.submissions_left(task, k_agent.agent), (json{{"used", 2}, {"remaining", 0}}));
  try {
    pipeline.submit_to_task(task, body, "", k_agent);
    FAIL() << "a third submission was taken";
  } catch (const api_error& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.type(), "submission_limit");
    EXPECT_NE(std::string(e.what()).find("at most 2 submissions from each agent in 24 hours"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.context()["per_agent"], 2);
    // Its first submission leaves the window in about a day.
    const double after = e.context()["retry_after_s"].get<double>();
    EXPECT_GT(after, 86000);
    EXPECT_LE(after, 86400);
  }
  EXPECT_EQ(store.list({}).size(), 2u);  // nothing stored
  // A retry of an accepted one is answered; another agent, and an operator, are not held.
  const auto again = pipeline.submit_to_task(task, body, "first", k_agent);
  EXPECT_EQ(again.id, first.id);
  EXPECT_FALSE(again.created);
  EXPECT_TRUE(pipeline.submit_to_task(task, body, "", other).created);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(pipeline.submit_to_task(task, body, "", k_operator).created);

  // Without a window the bound is over the task's life, and says so.
  t["submissions"] = {{"per_agent", 1}};
  task.template_json = t.dump();
  try {
    pipeline.submit_to_task(task, body, "", other);
    FAIL() << "a second submission was taken by a task that takes one";
  } catch (const api_error& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_FALSE(e.context().contains("retry_after_s"));
    EXPECT_NE(std::string(e.what()).find("address 10.0.0.7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("it takes no more from it"), std::string::npos)
        << e.what();
  }
  // A task without a bound has nothing to tell.
  EXPECT_TRUE(pipeline.submissions_left(copy_task(), k_agent.agent).is_null());
}

// The daemon's job seeds come from the operating system's random source, not a generator whose
// state one seed gives away: within int64, and no two of many alike.
TEST(UnpredictableSeed, IsWithinInt64AndNeverRepeatsInAThousandDraws) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t s = unpredictable_seed();
    EXPECT_LE(s, std::uint64_t(std::numeric_limits<std::int64_t>::max()));
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace kernelscan
