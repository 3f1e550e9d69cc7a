// Result projections (?fields=): the names accepted and refused, and rows projected from their
// stored text agreeing with the same selection made on the parsed document.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "api/json.hpp"
#include "api/result_codec.hpp"
#include "api/result_fields.hpp"

namespace kernelscan {
namespace {

const std::vector<std::string> k_params{"M", "N"};

point_result ok_row(std::uint64_t index) {
  point_result r;
  r.index = index;
  r.params = {{"M", 128 + std::int64_t(index)}, {"N", 64}};
  r.status = point_status::ok;
  time_summary t;
  t.mean = 13.000000000000002;
  t.median = 12.5;
  t.min = 10;
  t.max = 20;
  t.p5 = 10.5;
  t.p95 = 18;
  t.ci95_low = 12;
  t.ci95_high = 13.25;
  r.time_us = t;
  r.samples = 100;
  r.converged = true;
  r.stop_reason = "noise_target";
  point_metrics m;
  m.flops = 2e9;
  m.bytes = 4e8;
  m.tflops = 1.25;
  m.bound = "compute";
  m.roof_source = "datasheet";
  r.metrics = m;
  r.verification.status = "skipped";
  r.verification.note = "a note with \"quotes\", {braces} and [brackets]";
  r.flags = {"x,y", "}"};
  r.environment.device = "AMD Instinct MI300X (mock)";
  return r;
}

point_result failed_row() {
  point_result r;
  r.index = 7;
  r.params = {{"M", 1}, {"N", 2}};
  r.status = point_status::failed;
  r.error = point_error{"device_fault", "the worker crashed"};
  r.flags = {"device_fault"};
  return r;
}

json project(const result_fields& f, const json& row) {
  std::string out;
  f.project(row.dump(), out);
  return json::parse(out);
}

TEST(ResultFields, KeepsTheNamedMembersInTheRowsOrder) {
  const json row = to_json(ok_row(3));
  const auto f =
      result_fields::parse("time_us.median,index,params,metrics.tflops,flags,error", k_params);
  const json p = project(f, row);
  EXPECT_EQ(p.dump(), json::parse(R"({"index":3,"params":{"M":131,"N":64},
      "time_us":{"median":12.5},"metrics":{"tflops":1.25},"flags":["x,y","}"]})")
                          .dump());
}

TEST(ResultFields, SimulatedIsAMemberToAskFor) {
  json row = to_json(ok_row(3));
  row["simulated"] = true;
  const json p = project(result_fields::parse("index,simulated", k_params), row);
  EXPECT_EQ(p.dump(), R"({"index":3,"simulated":true})");
}

TEST(ResultFields, ValuesAreTheStoredTextExactly) {
  const json row = to_json(ok_row(0));
  const auto f = result_fields::parse("time_us,verification", k_params);
  const json p = project(f, row);
  EXPECT_EQ(p["time_us"], row["time_us"]);
  EXPECT_EQ(p["verification"], row["verification"]);
  EXPECT_EQ(p["time_us"]["mean"].get<double>(), 13.000000000000002);
}

TEST(ResultFields, NullParentsStayNullAndAbsentMembersStayAbsent) {
  const json failed = to_json(failed_row());
  const auto f = result_fields::parse("index,status,error,time_us.median,metrics.tflops", k_params);
  EXPECT_EQ(project(f, failed).dump(), json::parse(R"({"index":7,"status":"failed",
      "error":{"type":"device_fault","message":"the worker crashed"},"time_us":null,
      "metrics":null})")
                                           .dump());
  const json ok = project(f, to_json(ok_row(1)));
  EXPECT_FALSE(ok.contains("error"));
  EXPECT_EQ(ok["time_us"].size(), 1u);
}

TEST(ResultFields, AWholeMemberWinsOverItsParts) {
  const json row = to_json(ok_row(2));
  for (const char* list : {"time_us,time_us.median", "time_us.median,time_us"}) {
    EXPECT_EQ(project(result_fields::parse(list, k_params), row)["time_us"], row["time_us"])
        << list;
  }
  const json p = project(result_fields::parse("params.N,time_us.p5,time_us.p95", k_params), row);
  EXPECT_EQ(p.dump(), R"({"params":{"N":64},"time_us":{"p5":10.5,"p95":18.0}})");
}

TEST(ResultFields, ToleratesWhitespaceInTheStoredText) {
  const json row = to_json(ok_row(4));
  const auto f = result_fields::parse("index,time_us.median,flags", k_params);
  std::string out;
  f.project(row.dump(2), out);
  EXPECT_EQ(json::parse(out), project(f, row));
}

TEST(ResultFields, RefusesUnknownEmptyAndRepeatedNames) {
  for (const char* bad : {"", "index,", ",index", "colour", "time_us.colour", "params.K",
                          "index,index", "time_us.", "fitness.colour", "Index", "index.x"}) {
    EXPECT_THROW(result_fields::parse(bad, k_params), std::invalid_argument) << bad;
  }
  try {
    result_fields::parse("index,time_us.colour", k_params);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("time_us.colour"), std::string::npos) << e.what();
  }
}

TEST(ResultFields, RefusesARowThatIsNotAnObject) {
  const auto f = result_fields::parse("index", k_params);
  for (const char* bad : {"", "[1]", "{\"index\":", "{\"index\" 1}", "{\"a\":\"x}", "{\"a\":1,}"}) {
    std::string out;
    EXPECT_THROW(f.project(bad, out), std::invalid_argument) << bad;
  }
}

// Not a benchmark with a threshold (machines differ), but a record of why rows are scanned and
// not parsed: the figures print with the test.
TEST(ResultFields, ScanningIsCheaperThanParsing) {
  std::vector<std::string> rows;
  for (std::uint64_t i = 0; i < 2000; ++i)
    rows.push_back(to_json(ok_row(i)).dump());
  const auto f = result_fields::parse(
      "index,params,status,time_us.median,time_us.ci95_low,time_us.ci95_high,metrics", k_params);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  std::size_t bytes = 0;
  for (const auto& r : rows) {
    std::string out;
    f.project(r, out);
    bytes += out.size();
  }
  const auto scan = clock::now() - t0;
  t0 = clock::now();
  for (const auto& r : rows)
    bytes += json::parse(r).size();
  const auto parse = clock::now() - t0;
  EXPECT_GT(bytes, 0u);
  const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
  std::printf("[ result_fields ] 2000 rows: projected in %.0f us, parsed in %.0f us\n", us(scan),
              us(parse));
}

}  // namespace
}  // namespace kernelscan
