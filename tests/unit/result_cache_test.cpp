#include "server/result_cache.hpp"

#include <gtest/gtest.h>

#include "api/job_spec_codec.hpp"
#include "server/rooflines.hpp"
#include "storage/sqlite_job_store.hpp"

namespace kernelscan {
namespace {

job_spec spec(const std::string& name, bool cache = true) {
  json j = {{"name", name},
            {"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", 4096}}},
            {"seed", 7},
            {"cache", cache}};
  return parse_job_spec(j, spec_limits{});
}

device_info mi300x(int index, double bandwidth) {
  device_info d;
  d.index = index;
  d.engine = engine_kind::mock;
  d.name = "AMD Instinct MI300X (mock)";
  d.arch = "gfx942";
  d.driver = "kernelscan-mock";
  d.measured = measured_roofline{};
  d.measured->peaks.bandwidth_gbps = bandwidth;
  d.measured->measured_ms = 1000 + index;
  return d;
}

std::int64_t finished_job(job_store& store, const manual_clock& clock) {
  job_submission s;
  s.name = "measured";
  s.op = "stream";
  s.total_points = 1;
  s.spec_json = "{}";
  const auto id = store.submit(s, clock.unix_ms()).id;
  claim_request r;
  r.node = "n";
  r.engine = "mock";
  r.now_ms = clock.unix_ms();
  const auto lease = store.claim(r)->lease;
  result_row row;
  row.job_id = id;
  row.ok = true;
  row.median_us = 3;
  row.params_json = "{}";
  row.result_json = R"({"index":0})";
  store.add_results(std::vector<result_row>{row}, clock.unix_ms());
  return store.finish("n", lease, job_status::succeeded, std::nullopt, clock.unix_ms(),
                      std::nullopt)
             ? id
             : 0;
}

TEST(ResultCache, TheKeyLeavesOutWhatDoesNotChangeAMeasurement) {
  // Another name, seed or device index is the same measurement; other ceilings are not.
  EXPECT_EQ(cache_key(spec("a"), mi300x(0, 5000)), cache_key(spec("b"), mi300x(3, 5000)));
  EXPECT_NE(cache_key(spec("a"), mi300x(0, 5000)), cache_key(spec("a"), mi300x(0, 4000)));
  auto datasheet = mi300x(0, 5000);
  datasheet.measured.reset();
  EXPECT_NE(cache_key(spec("a"), datasheet), cache_key(spec("a"), mi300x(0, 5000)));
  auto other = mi300x(0, 5000);
  other.driver = "rocm-6.4";
  EXPECT_NE(cache_key(spec("a"), other), cache_key(spec("a"), mi300x(0, 5000)));
  // Results of another version of kernelscan (its measurement, its analysis) answer no job.
  EXPECT_EQ(cache_key(spec("a"), mi300x(0, 5000)),
            cache_key(spec("a"), mi300x(0, 5000), KERNELSCAN_VERSION));
  EXPECT_NE(cache_key(spec("a"), mi300x(0, 5000), "0.1.0"),
            cache_key(spec("a"), mi300x(0, 5000), "0.2.0"));
}

TEST(ResultCache, AnIdenticalJobIsAnsweredFromTheStoreUnlessItAsksNotToBe) {
  manual_clock clock;
  sqlite_job_store store(":memory:");
  result_cache cache(store, clock);
  const auto first = finished_job(store, clock);
  ASSERT_NE(first, 0);
  EXPECT_FALSE(cache.answer(first, spec("first"), mi300x(0, 5000), true));  // records its key
  job_submission s;
  s.name = "again";
  s.op = "stream";
  s.total_points = 1;
  s.spec_json = "{}";
  const auto second = store.submit(s, clock.unix_ms()).id;
  EXPECT_FALSE(cache.answer(second, spec("again", false), mi300x(1, 5000), true));
  EXPECT_FALSE(cache.answer(second, spec("again"), mi300x(1, 5000), false));  // measured some
  EXPECT_FALSE(cache.answer(second, spec("again"), mi300x(1, 4000), true));   // other ceilings
  EXPECT_EQ(cache.answer(second, spec("again"), mi300x(1, 5000), true), first);
  EXPECT_EQ(store.get(second)->cached_from, first);
  EXPECT_EQ(store.results(second, 0, 1).at(0).result_json,
            R"({"index":0,"cache":{"hit":true,"job_id":)" + std::to_string(first) + "}}");
}

TEST(Rooflines, BelongToADeviceOfANode) {
  sqlite_job_store store(":memory:");
  rooflines here(store, ""), a(store, "gpu-01"), b(store, "gpu-02");
  const auto d = mi300x(0, 5000);
  EXPECT_EQ(here.key(d), "mock|AMD Instinct MI300X (mock)|gfx942|kernelscan-mock|0");
  EXPECT_EQ(a.key(d), "gpu-01|" + here.key(d));
  EXPECT_FALSE(a.load(d));
  ASSERT_TRUE(a.save(d, *d.measured));
  const auto loaded = a.load(d);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->peaks.bandwidth_gbps, 5000);
  EXPECT_EQ(loaded->measured_ms, 1000);
  EXPECT_FALSE(b.load(d));  // another node's device 0 measures its own
  store.put_roofline(b.key(d), "not json", 1);
  EXPECT_FALSE(b.load(d));  // unreadable: measure again
}

}  // namespace
}  // namespace kernelscan
