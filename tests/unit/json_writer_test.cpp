#include "api/detail/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "api/job_codec.hpp"
#include "api/json.hpp"

namespace kernelscan {
namespace {

TEST(JsonWriter, StringsRoundTripThroughAJsonParser) {
  const std::vector<std::string> strings{
      "",
      "plain",
      "quote \" and backslash \\",
      "new\nline\ttab\rcr\bbs\fff",
      std::string("nul \0 and \x1f unit separator", 29),
      "utf-8: µs, 日本語, 🚀",
      "a run of plain text then \" then more plain text",
  };
  for (const auto& s : strings) {
    std::string out;
    detail::json_writer w(out);
    w.begin_object().key(s).value(s).end_object();
    const json parsed = json::parse(out);
    ASSERT_TRUE(parsed.contains(s)) << out;
    EXPECT_EQ(parsed[s].get<std::string>(), s) << out;
  }
}

TEST(JsonWriter, NumbersBooleansNullsAndNesting) {
  std::string out;
  detail::json_writer w(out);
  w.begin_object();
  w.key("i").value(std::int64_t(-42)).key("u").value(std::uint64_t(18446744073709551615ull));
  w.key("d").value(0.1).key("whole").value(2.0).key("big").value(1e300);
  w.key("inf").value(std::numeric_limits<double>::infinity());
  w.key("t").value(true).key("f").value(false).key("n").null();
  w.key("o").begin_object().key("x").value(1).end_object();
  w.key("raw").raw(R"({"already":"json"})");
  w.end_object();
  EXPECT_EQ(out.find("\"whole\":2.0"), out.find("\"whole\":"));  // stays a float
  const json j = json::parse(out);
  EXPECT_EQ(j["i"], -42);
  EXPECT_EQ(j["u"].get<std::uint64_t>(), 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(j["d"].get<double>(), 0.1);
  EXPECT_TRUE(j["whole"].is_number_float());
  EXPECT_DOUBLE_EQ(j["big"].get<double>(), 1e300);
  EXPECT_TRUE(j["inf"].is_null());
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["f"], false);
  EXPECT_TRUE(j["n"].is_null());
  EXPECT_EQ(j["o"]["x"], 1);
  EXPECT_EQ(j["raw"]["already"], "json");
}

TEST(JobJson, TextIsTheJsonOfTheRecordWithTheSpecSpliced) {
  job_record r;
  r.id = 7;
  r.name = "a \"quoted\" name";
  r.labels = {{"k", "v\nw"}};
  r.status = job_status::running;
  r.op = "gemm";
  r.created_ms = 1763758020123;
  r.started_ms = 1763758021000;
  r.error = point_error{"points_failed", "1 of 2 points failed"};
  r.best = job_best{3, 12.5, R"({"M":1024})"};
  r.spec_json = R"({"kernel":{"op":"gemm"},"sweep":{"M":[1024]}})";
  const json j = json::parse(job_json_text(r));
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["name"], r.name);
  EXPECT_EQ(j["labels"]["k"], "v\nw");
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["requested_device"], "any");
  EXPECT_TRUE(j["device"].is_null());
  EXPECT_EQ(j["created_at"], "2025-11-21T20:47:00.123Z");
  EXPECT_EQ(j["started_at"], "2025-11-21T20:47:01.000Z");
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_EQ(j["summary"]["best"]["params"]["M"], 1024);
  EXPECT_DOUBLE_EQ(j["summary"]["best"]["median_us"].get<double>(), 12.5);
  EXPECT_EQ(j["spec"]["sweep"]["M"][0], 1024);
  EXPECT_EQ(j["links"]["results"], "/api/v1/jobs/7/results");
  EXPECT_EQ(to_json(r), j);
}

TEST(JobJson, TimestampsAcrossDatesAndLeapYears) {
  EXPECT_EQ(format_time_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time_ms(951782400000), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(format_time_ms(4107542399999), "2100-02-28T23:59:59.999Z");
  EXPECT_EQ(format_time_ms(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace kernelscan
