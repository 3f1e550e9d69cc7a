// Evaluation tasks' codec, held-out sweeps and what a candidate sees of a task's job.
#include "api/task_codec.hpp"

#include <gtest/gtest.h>

#include "api/held_out.hpp"
#include "api/job_codec.hpp"
#include "engine/sweep.hpp"

namespace kernelscan {
namespace {

json matmul_task() {
  return parse_json(R"js({
    "name": "matmul.f32",
    "description": "C = A*B",
    "kernel": {"language": "opencl", "block": [8, 8, 1], "grid": ["ceil(N/8)", "ceil(N/8)", 1],
      "args": [{"name": "c", "type": "f32*", "count": "N*N", "output": true},
               {"name": "a", "type": "f32*", "count": "N*N"},
               {"name": "b", "type": "f32*", "count": "N*N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N*N*N", "bytes": "12*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                    "a": "a", "b": "b", "c": "c"}},
    "sweep": {"N": [64, 128]},
    "held_out": {"N": [96]},
    "verify": {"trials": 3, "atol": 1e-3}
  })js");
}

std::vector<std::string> fields_of(const validation_error& e) {
  std::vector<std::string> out;
  for (const auto& f : e.errors())
    out.push_back(f.field);
  return out;
}

TEST(Sweep, HeldOutPointsComeAfterThePublicOnes) {
  const sweep s({{"M", {1, 2}}, {"N", {10, 20}}}, {{"M", {7}}, {"N", {70, 80}}});
  EXPECT_EQ(s.public_size(), 4u);
  EXPECT_EQ(s.size(), 6u);
  EXPECT_EQ(s.point(3), (std::vector<std::int64_t>{2, 20}));
  EXPECT_EQ(s.point(4), (std::vector<std::int64_t>{7, 70}));
  EXPECT_EQ(s.point(5), (std::vector<std::int64_t>{7, 80}));
  const sweep plain({{"N", {1, 2, 3}}});
  EXPECT_EQ(plain.public_size(), 3u);
  EXPECT_EQ(plain.size(), 3u);
}

TEST(TaskCodec, ATaskIsValidatedAsTheJobItMakes) {
  const task_definition t = parse_task(matmul_task(), spec_limits{});
  EXPECT_EQ(t.name, "matmul.f32");
  EXPECT_EQ(t.description, "C = A*B");
  EXPECT_FALSE(t.template_json.contains("name"));
  EXPECT_EQ(t.template_json["held_out"]["N"], json::array({96}));

  json job = task_job_body("matmul.f32", t.template_json,
                           {{"source", "__kernel void mm(__global float* c) {}"},
                            {"entry", "mm"},
                            {"labels", {{"gen", "3"}}}});
  EXPECT_EQ(job["kernel"]["entry"], "mm");
  EXPECT_EQ(job["kernel"]["block"], json::array({8, 8, 1}));  // the task's default
  EXPECT_EQ(job["labels"], (json{{"gen", "3"}, {"task", "matmul.f32"}}));
  EXPECT_EQ(job["cache"], false);
  spec_limits limits;
  limits.task_job = true;
  const job_spec spec = parse_job_spec(job, limits);
  EXPECT_EQ(spec.sweep.public_size(), 2u);
  EXPECT_EQ(spec.sweep.size(), 3u);
  // Stored and read back as it was, held-out points included.
  const json stored = to_json(spec);
  EXPECT_EQ(stored["held_out"]["N"], json::array({96}));
  EXPECT_EQ(parse_job_spec(stored, spec_limits::stored()), spec);
  EXPECT_EQ(public_points(stored), 2u);
  // A plain job may not have them.
  EXPECT_THROW(parse_job_spec(job, spec_limits{}), validation_error);
}

TEST(TaskCodec, ASubmissionMayGiveOnlyTheCandidatesFields) {
  const task_definition t = parse_task(matmul_task(), spec_limits{});
  for (const char* field : {"verify", "sweep", "held_out", "fitness", "reference", "args", "engine",
                            "seed", "mock", "timing", "kernel"}) {
    try {
      task_job_body(t.name, t.template_json, {{"source", "x"}, {field, json::object()}});
      FAIL() << field << " was accepted";
    } catch (const validation_error& e) {
      EXPECT_EQ(fields_of(e), std::vector<std::string>{field});
      EXPECT_NE(e.errors()[0].message.find("is fixed by task \"matmul.f32\""), std::string::npos);
    }
  }
  EXPECT_THROW(task_job_body(t.name, t.template_json, {{"source", "x"}, {"language", "hip"}}),
               validation_error);
  EXPECT_NO_THROW(
      task_job_body(t.name, t.template_json, {{"source", "x"}, {"language", "opencl"}}));
  EXPECT_THROW(task_job_body(t.name, t.template_json, json::array()), validation_error);
}

TEST(TaskCodec, BadTemplatesAreRefusedNamingTheirFields) {
  auto refused = [](json t) {
    try {
      parse_task(t, spec_limits{});
    } catch (const validation_error& e) {
      return fields_of(e);
    }
    return std::vector<std::string>{"(accepted)"};
  };
  auto with = [](const std::function<void(json&)>& f) {
    json t = matmul_task();
    f(t);
    return t;
  };
  using v = std::vector<std::string>;
  EXPECT_EQ(refused(with([](json& t) { t["verify"]["trials"] = 1; })), v{"verify.trials"});
  EXPECT_EQ(refused(with([](json& t) { t["verify"]["atol"] = 1e30; })), v{"verify.atol"});
  EXPECT_EQ(refused(with([](json& t) { t["verify"]["atol"] = 0.011; })), v{"verify.atol"});
  EXPECT_EQ(refused(with([](json& t) { t["verify"]["atol"] = 0.01; })), v{"(accepted)"});
  EXPECT_EQ(refused(with([](json& t) { t["kernel"].erase("reference"); })), v{"kernel.reference"});
  EXPECT_EQ(refused(with([](json& t) { t["kernel"]["args"][2]["count"] = "N*"; })),
            v{"kernel.args[2].count"});
  EXPECT_EQ(refused(with([](json& t) {
              t["held_out"] = {{"N", {96}}, {"K", {1}}};
            })),
            v{"held_out.K"});
  EXPECT_EQ(refused(with([](json& t) { t["held_out"] = json::array(); })), v{"held_out"});
  EXPECT_EQ(refused(with([](json& t) { t["held_out"] = json::object(); })), v{"(accepted)"});
  EXPECT_EQ(refused(with([](json& t) { t["name"] = ""; })), v{"name"});
  // A URL's path drops . and ..: no task could be read by those names.
  EXPECT_EQ(refused(with([](json& t) { t["name"] = ".."; })), v{"name"});
  EXPECT_EQ(refused(with([](json& t) { t["name"] = "."; })), v{"name"});
  EXPECT_EQ(refused(with([](json& t) { t["name"] = "..a"; })), v{"(accepted)"});
  EXPECT_EQ(refused(with([](json& t) { t["variants"] = json::array(); })), v{"variants"});
  EXPECT_EQ(refused(json::array()), v{""});
  // The bound on each agent's submissions.
  EXPECT_EQ(refused(with([](json& t) { t["submissions"] = 5; })), v{"submissions"});
  EXPECT_EQ(refused(with([](json& t) { t["submissions"] = json::object(); })),
            v{"submissions.per_agent"});
  EXPECT_EQ(refused(with([](json& t) {
              t["submissions"] = {{"per_agent", 0}};
            })),
            v{"submissions.per_agent"});
  EXPECT_EQ(refused(with([](json& t) {
              t["submissions"] = {{"per_agent", 2.5}};
            })),
            v{"submissions.per_agent"});
  EXPECT_EQ(refused(with([](json& t) {
              t["submissions"] = {{"per_agent", 5}, {"window_hours", 0}};
            })),
            v{"submissions.window_hours"});
  EXPECT_EQ(refused(with([](json& t) {
              t["submissions"] = {{"per_agent", 5}, {"per_day", 1}};
            })),
            v{"submissions.per_day"});
  EXPECT_EQ(refused(with([](json& t) {
              t["submissions"] = {{"per_agent", 5}, {"window_hours", 0.5}};
            })),
            v{"(accepted)"});
}

// A task's bound on each agent's submissions is kept with its template, shown to agents, and
// not part of the job a submission makes.
TEST(TaskCodec, TheSubmissionBoundIsTheTasksNotTheJobs) {
  json body = matmul_task();
  body["submissions"] = {{"per_agent", 20}, {"window_hours", 24}};
  const task_definition t = parse_task(body, spec_limits{});
  const auto bound = submission_bound_of(t.template_json);
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->per_agent, 20);
  EXPECT_EQ(bound->window_hours, 24.0);
  const json job =
      task_job_body(t.name, t.template_json,
                    {{"source", "__kernel void mm(__global float* c) {}"}, {"entry", "mm"}});
  EXPECT_FALSE(job.contains("submissions"));
  spec_limits limits;
  limits.task_job = true;
  EXPECT_NO_THROW(parse_job_spec(job, limits));
  const json view = task_json(t.name, t.description, t.template_json, 1, std::nullopt, false);
  EXPECT_EQ(view["submissions"], (json{{"per_agent", 20}, {"window_hours", 24}}));
  EXPECT_FALSE(submission_bound_of(parse_task(matmul_task(), spec_limits{}).template_json));
  EXPECT_TRUE(task_json(t.name, "", parse_task(matmul_task(), spec_limits{}).template_json, 1,
                        std::nullopt, false)["submissions"]
                  .is_null());
}

// An empty held_out is none: no held-out point is counted or measured.
TEST(TaskCodec, AnEmptyHeldOutIsNone) {
  json none = matmul_task();
  none["held_out"] = json::object();
  const task_definition t = parse_task(none, spec_limits{});
  EXPECT_FALSE(t.template_json.contains("held_out"));
  EXPECT_EQ(task_json(t.name, "", t.template_json, 1, std::nullopt, true)["held_out_points"], 0);
  EXPECT_EQ(t.sample.sweep.size(), 2u);
  json job = task_job_body(t.name, t.template_json,
                           {{"source", "__kernel void mm() {}"}, {"entry", "mm"}});
  job["held_out"] = json::object();
  spec_limits limits;
  limits.task_job = true;
  EXPECT_EQ(parse_job_spec(job, limits).sweep.size(), 2u);
}

TEST(TaskCodec, EveryFailingFieldOfADefinitionIsSaidAtOnce) {
  try {
    parse_task(json::parse(R"({"name": "x", "kernel": {"language": "opencl", "entry": "",
                                "args": []}, "sweep": {}})"),
               spec_limits{});
    ADD_FAILURE() << "accepted";
  } catch (const validation_error& e) {
    EXPECT_EQ(fields_of(e),
              (std::vector<std::string>{"kernel.reference", "kernel.entry", "kernel.args"}));
  }
}

TEST(HeldOut, MessagesAboutAHeldOutPointDoNotDescribeIt) {
  EXPECT_EQ(scrubbed_message("must be positive, not 0 at point 2 (N=12288)", 2),
            "must be positive, not 0 at a held-out point (its details are not shown)");
  EXPECT_EQ(scrubbed_message("must be positive, not 0 at point 1 (N=8192)", 2),
            "must be positive, not 0 at point 1 (N=8192)");
  EXPECT_EQ(scrubbed_message("3 of 3 points failed; the first, point 2: timeout: 12288 x", 2),
            "3 of 3 points failed; the first, a held-out point (its details are not shown)");
  EXPECT_EQ(scrubbed_message("no point here", 2), "no point here");
  EXPECT_EQ(scrubbed_message("point 99999999999999999999999 (N=1)", 2),
            "point 99999999999999999999999 (N=1)");
  // A field error about a held-out point is replaced whole: the value an expression took there
  // comes before the point is named.
  EXPECT_EQ(scrubbed_field_message(
                "\"1 - N*(N!=64)*(N!=128)\" is -95; must be at least 1 at point 2 (N=96)", 2),
            "is not valid at a held-out point (its details are not shown)");
  EXPECT_EQ(scrubbed_field_message("is -1; must be at least 1 at point 1 (N=128)", 2),
            "is -1; must be at least 1 at point 1 (N=128)");
}

TEST(HeldOut, AHeldOutPointMayNotBeAPublicOne) {
  auto held = [](const json& held_out) {
    json t = json::parse(R"({"sweep": {"M": [64, 128], "N": [8, 16]}})");
    t["held_out"] = held_out;
    spec_limits limits;
    limits.task_job = true;
    json job = json::parse(R"({"kernel": {"op": "gemm", "m": "M", "n": "N", "k": 64}})");
    job["sweep"] = t["sweep"];
    job["held_out"] = held_out;
    try {
      (void)parse_job_spec(job, limits);
    } catch (const validation_error& e) {
      return e.errors().at(0).field + ": " + e.errors().at(0).message;
    }
    return std::string("(accepted)");
  };
  // Another N with a public M is another point; both values public is a public point.
  EXPECT_EQ(held(json{{"M", {128}}, {"N", {12}}}), "(accepted)");
  EXPECT_EQ(held(json{{"M", {96, 128}}, {"N", {12, 16}}}),
            "held_out: has the point (M=128, N=16) of the public sweep too: a held-out point is "
            "one the candidate never sees, with other values");
}

TEST(HeldOut, ACandidateSeesAHeldOutRowWithoutSizesOrTimes) {
  const std::string row = R"({"index":2,"params":{"N":96},"status":"ok","time_us":{"median":3},
    "metrics":{"gbps":1},"verification":{"status":"passed"},"flags":["x"],
    "fitness":{"correct":true,"speedup":2,"combined_score":0.75}})";
  EXPECT_EQ(json::parse(redacted_row(row)), json::parse(R"({"index":2,"held_out":true,"status":"ok",
              "fitness":{"correct":true,"combined_score":0.75},"flags":["x"]})"));

  job_record job;
  job.id = 1;
  job.task = "matmul";
  job.spec_json = R"({"sweep":{"N":[64,128]},"held_out":{"N":[96]}})";
  job.best = job_best{2, 3.5, R"({"N":96})"};
  redact_job(job, "");
  const std::string text = job_json_text(job);
  EXPECT_EQ(text.find("96"), std::string::npos) << text;
  EXPECT_EQ(text.find("3.5"), std::string::npos) << text;
  const json j = json::parse(text);
  EXPECT_EQ(j["summary"]["best"], (json{{"index", 2}, {"held_out", true}}));
  EXPECT_EQ(j["spec"], (json{{"sweep", {{"N", {64, 128}}}}}));
  EXPECT_EQ(j["task"], "matmul");

  // The same job as an event, and a public best point kept.
  job_record full = job;
  full.spec_json = R"({"sweep":{"N":[64,128]},"held_out":{"N":[96]}})";
  full.best = job_best{1, 3.5, R"({"N":128})"};
  const json event = json::parse(redacted_job_event(job_json_text(full)));
  EXPECT_FALSE(event["spec"].contains("held_out"));
  EXPECT_EQ(event["summary"]["best"]["params"]["N"], 128);
  full.best = job_best{2, 3.5, R"({"N":96})"};
  EXPECT_EQ(redacted_job_event(job_json_text(full)).find("96"), std::string::npos);
}

// A task may keep its held-out points' scores private: it needs held-out points, only a task's
// job carries it, and it is one of "shown" and "private".
TEST(TaskCodec, PrivateHeldOutScoresNeedHeldOutPoints) {
  json task = matmul_task();
  task["held_out_scores"] = "private";
  const task_definition t = parse_task(task, spec_limits{});
  EXPECT_TRUE(t.sample.private_held_out_scores);
  EXPECT_EQ(task_json(t.name, "", t.template_json, 1, std::nullopt, false)["held_out_scores"],
            "private");
  const json job = task_job_body(t.name, t.template_json,
                                 {{"source", "__kernel void mm() {}"}, {"entry", "mm"}});
  spec_limits as_task;
  as_task.task_job = true;
  const job_spec spec = parse_job_spec(job, as_task);
  EXPECT_TRUE(spec.private_held_out_scores);
  EXPECT_EQ(to_json(spec)["held_out_scores"], "private");
  EXPECT_EQ(parse_job_spec(to_json(spec), as_task), spec);
  // Shown by default, and said so.
  const task_definition shown = parse_task(matmul_task(), spec_limits{});
  EXPECT_FALSE(shown.sample.private_held_out_scores);
  EXPECT_FALSE(to_json(shown.sample).contains("held_out_scores"));
  EXPECT_EQ(
      task_json(shown.name, "", shown.template_json, 1, std::nullopt, false)["held_out_scores"],
      "shown");
  auto refusal = [](const json& definition) {
    try {
      (void)parse_task(definition, spec_limits{});
    } catch (const validation_error& e) {
      return e.errors().at(0).field + ": " + e.errors().at(0).message;
    }
    return std::string("(accepted)");
  };
  json none = task;
  none.erase("held_out");
  EXPECT_EQ(refusal(none),
            "held_out_scores: is \"private\" without held-out points: give \"held_out\" the "
            "sizes whose scores only an operator sees");
  json other = task;
  other["held_out_scores"] = "secret";
  EXPECT_EQ(refusal(other).rfind("held_out_scores: ", 0), 0u) << refusal(other);
  // A plain job has no held-out points to keep private.
  json plain = job;
  plain.erase("held_out");
  plain["labels"].erase("task");
  try {
    (void)parse_job_spec(plain, spec_limits{});
    ADD_FAILURE() << "accepted";
  } catch (const validation_error& e) {
    EXPECT_EQ(fields_of(e), std::vector<std::string>{"held_out_scores"});
  }
}

// The fitness a job stores carries every flag its points raised, and when it has held-out points
// its public part: the same summary over the public points alone, with their flags only.
TEST(HeldOut, AJobsFitnessCarriesItsPublicPart) {
  std::vector<scored_point> points{{true, true, 2.0, 2.0, std::nullopt, false, 0, {}},
                                   {true, true, 8.0, 8.0, std::nullopt, false, 1, {"slow"}},
                                   {true, true, 0.5, 0.5, std::nullopt, false, 2, {"odd"}}};
  const json f = json::parse(job_fitness_text(points, 3, true, {}, 2));
  EXPECT_DOUBLE_EQ(f["combined_score"].get<double>(), 2.0);  // cbrt(2 · 8 · 0.5)
  EXPECT_EQ(f["points"], 3);
  EXPECT_EQ(f["flags"], json::array({"odd", "slow"}));
  EXPECT_DOUBLE_EQ(f["public"]["combined_score"].get<double>(), 4.0);  // sqrt(2 · 8)
  EXPECT_EQ(f["public"]["points"], 2);
  EXPECT_EQ(f["public"]["flags"], json::array({"slow"}));
  EXPECT_FALSE(f["public"].contains("public"));
  // Without held-out points there is no public part; a public point never measured counts 0.
  EXPECT_FALSE(json::parse(job_fitness_text(points, 3, true, {}, std::nullopt)).contains("public"));
  points.erase(points.begin());
  EXPECT_EQ(json::parse(job_fitness_text(points, 3, true, {}, 2))["public"]["combined_score"], 0.0);
}

// With private held-out scores, a candidate sees a held-out row with its status only and the
// job's fitness over the public points, marked so; the operator's view is unchanged.
TEST(HeldOut, ACandidateSeesNoPrivateHeldOutScore) {
  const std::string row = R"({"index":2,"params":{"N":96},"status":"ok","time_us":{"median":3},
    "flags":["x"],"fitness":{"correct":true,"speedup":2,"combined_score":0.75}})";
  EXPECT_EQ(json::parse(redacted_row(row, true)),
            json::parse(R"({"index":2,"held_out":true,"status":"ok"})"));
  const std::string spec =
      R"({"sweep":{"N":[64,128]},"held_out":{"N":[96]},"held_out_scores":"private"})";
  EXPECT_TRUE(private_held_out_scores(json::parse(spec)));
  EXPECT_FALSE(
      private_held_out_scores(json::parse(R"({"sweep":{"N":[64,128]},"held_out":{"N":[96]}})")));

  job_record job;
  job.id = 1;
  job.task = "matmul";
  job.spec_json = spec;
  job.fitness_json =
      R"({"correct":true,"points":3,"combined_score":2.0,"public":{"correct":true,"points":2,)"
      R"("combined_score":4.0}})";
  const std::string full_text = job_json_text(job);
  redact_job(job, "");
  const json j = json::parse(job_json_text(job));
  EXPECT_EQ(
      j["summary"]["fitness"],
      json::parse(R"({"correct":true,"points":2,"combined_score":4.0,"held_out":"private"})"));
  EXPECT_EQ(j["spec"]["held_out_scores"], "private");
  const json event = json::parse(redacted_job_event(full_text));
  EXPECT_EQ(event["summary"]["fitness"], j["summary"]["fitness"]);
  // A list view (no spec in the record) is redacted from the spec given.
  job_record listed;
  listed.id = 1;
  listed.task = "matmul";
  listed.fitness_json =
      R"({"points":3,"combined_score":2.0,"public":{"points":2,"combined_score":4.0}})";
  redact_job(listed, spec);
  EXPECT_EQ(json::parse(listed.fitness_json)["combined_score"], 4.0);
}

}  // namespace
}  // namespace kernelscan
