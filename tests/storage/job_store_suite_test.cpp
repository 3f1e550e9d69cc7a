// The job store's behaviour, one suite run against every backend (SQLite and PostgreSQL): what
// the server relies on must hold for both.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/storage/store_backends.hpp"

namespace kernelscan {
namespace {

job_submission submission(std::string name, std::map<std::string, std::string> labels = {},
                          std::uint64_t total = 4) {
  job_submission s;
  s.name = std::move(name);
  s.labels = std::move(labels);
  s.priority = 3;
  s.engine = engine_kind::mock;
  s.requested_device = 1;
  s.op = "gemm";
  s.total_points = total;
  s.spec_json = R"({"kernel":{"op":"gemm"}})";
  s.request_hash = "hash-" + s.name;
  return s;
}

result_row row(std::int64_t job, std::uint64_t index, bool ok, std::optional<double> median) {
  result_row r;
  r.job_id = job;
  r.index = index;
  r.ok = ok;
  r.median_us = median;
  r.params_json = R"({"M":)" + std::to_string(index * 100) + "}";
  r.result_json = R"({"index":)" + std::to_string(index) + "}";
  return r;
}

std::vector<std::int64_t> ids(const std::vector<job_record>& jobs) {
  std::vector<std::int64_t> out;
  for (const auto& j : jobs)
    out.push_back(j.id);
  return out;
}

class JobStore : public ::testing::TestWithParam<std::string> {
 protected:
  JobStore() : m_owner(GetParam()), store(*m_owner) {}
  testing::test_store m_owner;
  job_store& store;
};

TEST_P(JobStore, SubmitReturnsIncreasingIdsAndGetReturnsEverything) {
  const auto a = store.submit(submission("first", {{"team", "perf"}, {"run", "7"}}), 1000);
  const auto b = store.submit(submission("second"), 2000);
  EXPECT_TRUE(a.created);
  EXPECT_FALSE(a.conflict);
  EXPECT_TRUE(b.created);
  EXPECT_GT(a.id, 0);
  EXPECT_GT(b.id, a.id);

  const auto job = store.get(a.id);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, a.id);
  EXPECT_EQ(job->name, "first");
  EXPECT_EQ(job->labels, (std::map<std::string, std::string>{{"team", "perf"}, {"run", "7"}}));
  EXPECT_EQ(job->status, job_status::queued);
  EXPECT_EQ(job->priority, 3);
  EXPECT_EQ(job->engine, engine_kind::mock);
  EXPECT_EQ(job->requested_device, 1);
  EXPECT_FALSE(job->device.has_value());
  EXPECT_EQ(job->op, "gemm");
  EXPECT_EQ(job->progress.total, 4u);
  EXPECT_EQ(job->progress.done, 0u);
  EXPECT_EQ(job->created_ms, 1000);
  EXPECT_FALSE(job->started_ms.has_value());
  EXPECT_FALSE(job->finished_ms.has_value());
  EXPECT_FALSE(job->error.has_value());
  EXPECT_FALSE(job->cancel_requested);
  EXPECT_EQ(job->spec_json, R"({"kernel":{"op":"gemm"}})");
  EXPECT_FALSE(job->best.has_value());
  EXPECT_EQ(store.spec_json(a.id), R"({"kernel":{"op":"gemm"}})");

  EXPECT_TRUE(store.get(b.id)->labels.empty());
  EXPECT_FALSE(store.get(b.id + 100).has_value());
  EXPECT_FALSE(store.spec_json(b.id + 100).has_value());

  auto any_device = submission("anywhere");
  any_device.requested_device.reset();
  any_device.engine = engine_kind::any;
  const auto c = store.submit(any_device, 3000);
  EXPECT_FALSE(store.get(c.id)->requested_device.has_value());
  EXPECT_EQ(store.get(c.id)->engine, engine_kind::any);
}

TEST_P(JobStore, IdempotencyKey) {
  auto s = submission("job");
  s.idempotency_key = "key-1";
  const auto first = store.submit(s, 1000);
  EXPECT_TRUE(first.created);

  const auto retry = store.submit(s, 2000);
  EXPECT_FALSE(retry.created);
  EXPECT_FALSE(retry.conflict);
  EXPECT_EQ(retry.id, first.id);

  auto other = s;
  other.request_hash = "different";
  const auto conflict = store.submit(other, 3000);
  EXPECT_FALSE(conflict.created);
  EXPECT_TRUE(conflict.conflict);
  EXPECT_EQ(conflict.id, first.id);

  // Neither retry created a job; another key does.
  EXPECT_EQ(store.count_by_status()[job_status::queued], 1);
  s.idempotency_key = "key-2";
  const auto second = store.submit(s, 4000);
  EXPECT_TRUE(second.created);
  EXPECT_NE(second.id, first.id);
  // Jobs without a key never collide.
  s.idempotency_key.reset();
  EXPECT_TRUE(store.submit(s, 5000).created);
  EXPECT_TRUE(store.submit(s, 5000).created);
  EXPECT_EQ(store.count_by_status()[job_status::queued], 4);
}

TEST_P(JobStore, ListNewestFirstWithFilters) {
  const auto j1 = store.submit(submission("j1", {{"team", "a"}, {"env", "ci"}}), 1).id;
  const auto j2 = store.submit(submission("j2", {{"team", "a"}}), 2).id;
  const auto j3 = store.submit(submission("j3", {{"team", "b"}, {"env", "ci"}}), 3).id;
  const auto j4 = store.submit(submission("j4", {{"team", "a"}, {"env", "ci"}}), 4).id;
  const auto j5 = store.submit(submission("j5"), 5).id;
  ASSERT_TRUE(store.start(j2, 0, 10));
  store.finish(j3, job_status::succeeded, std::nullopt, 20);

  EXPECT_EQ(ids(store.list({})), (std::vector<std::int64_t>{j5, j4, j3, j2, j1}));
  // List views carry labels but no spec.
  const auto all = store.list({});
  EXPECT_TRUE(all[0].spec_json.empty());
  EXPECT_EQ(all[1].labels.at("env"), "ci");

  list_filter queued;
  queued.statuses = {job_status::queued};
  EXPECT_EQ(ids(store.list(queued)), (std::vector<std::int64_t>{j5, j4, j1}));
  list_filter active;
  active.statuses = {job_status::running, job_status::succeeded};
  EXPECT_EQ(ids(store.list(active)), (std::vector<std::int64_t>{j3, j2}));

  list_filter team_a;
  team_a.labels = {{"team", "a"}};
  EXPECT_EQ(ids(store.list(team_a)), (std::vector<std::int64_t>{j4, j2, j1}));
  list_filter both;
  both.labels = {{"team", "a"}, {"env", "ci"}};
  EXPECT_EQ(ids(store.list(both)), (std::vector<std::int64_t>{j4, j1}));
  list_filter none;
  none.labels = {{"team", "b"}, {"env", "prod"}};
  EXPECT_TRUE(store.list(none).empty());

  list_filter page;
  page.limit = 2;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j5, j4}));
  page.before_id = j4;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j3, j2}));
  page.before_id = j2;
  EXPECT_EQ(ids(store.list(page)), (std::vector<std::int64_t>{j1}));
  page.before_id = j1;
  EXPECT_TRUE(store.list(page).empty());

  list_filter combined;
  combined.statuses = {job_status::queued};
  combined.labels = {{"env", "ci"}};
  combined.before_id = j4;
  EXPECT_EQ(ids(store.list(combined)), (std::vector<std::int64_t>{j1}));
}

TEST_P(JobStore, StartOnlyFromQueued) {
  const auto id = store.submit(submission("j"), 100).id;
  EXPECT_TRUE(store.start(id, 2, 150));
  auto job = store.get(id);
  EXPECT_EQ(job->status, job_status::running);
  EXPECT_EQ(job->device, 2);
  EXPECT_EQ(job->started_ms, 150);
  EXPECT_FALSE(store.start(id, 3, 160));  // already running
  EXPECT_EQ(store.get(id)->device, 2);

  // A requeued job starts again and keeps its first start time.
  store.requeue(id);
  EXPECT_EQ(store.get(id)->status, job_status::queued);
  EXPECT_TRUE(store.start(id, 0, 500));
  EXPECT_EQ(store.get(id)->started_ms, 150);
  EXPECT_EQ(store.get(id)->device, 0);

  store.finish(id, job_status::succeeded, std::nullopt, 900);
  EXPECT_FALSE(store.start(id, 0, 1000));
  EXPECT_FALSE(store.start(id + 1, 0, 1000));  // no such job
}

TEST_P(JobStore, CancelOutcomes) {
  const auto queued = store.submit(submission("q"), 1).id;
  const auto running = store.submit(submission("r"), 2).id;
  const auto finished = store.submit(submission("f"), 3).id;
  ASSERT_TRUE(store.start(running, 0, 10));
  store.finish(finished, job_status::failed, point_error{"internal", "boom"}, 20);

  EXPECT_EQ(store.cancel(queued, 100), cancel_outcome::cancelled);
  const auto q = store.get(queued);
  EXPECT_EQ(q->status, job_status::cancelled);
  EXPECT_TRUE(q->cancel_requested);
  EXPECT_EQ(q->finished_ms, 100);
  ASSERT_TRUE(q->error.has_value());
  EXPECT_EQ(q->error->type, "cancelled");
  EXPECT_FALSE(store.start(queued, 0, 110));
  EXPECT_EQ(store.get(queued)->status, job_status::cancelled);

  EXPECT_EQ(store.cancel(running, 100), cancel_outcome::requested);
  const auto r = store.get(running);
  EXPECT_EQ(r->status, job_status::running);  // the scheduler stops it
  EXPECT_TRUE(r->cancel_requested);
  EXPECT_FALSE(r->finished_ms.has_value());

  EXPECT_EQ(store.cancel(finished, 100), cancel_outcome::already_finished);
  EXPECT_EQ(store.get(finished)->status, job_status::failed);
  EXPECT_FALSE(store.get(finished)->cancel_requested);
  EXPECT_EQ(store.cancel(queued, 200), cancel_outcome::already_finished);

  EXPECT_EQ(store.cancel(9999, 100), cancel_outcome::not_found);
}

TEST_P(JobStore, AddResultsUpdatesProgressAndBest) {
  const auto id = store.submit(submission("j", {}, 6), 1).id;
  const auto other = store.submit(submission("other", {}, 2), 1).id;
  ASSERT_TRUE(store.start(id, 0, 2));

  const std::vector<result_row> batch{row(id, 2, true, 50.0), row(id, 0, true, 80.0),
                                      row(id, 4, false, std::nullopt), row(other, 0, true, 1.0)};
  store.add_results(batch, 10);
  auto job = store.get(id);
  EXPECT_EQ(job->progress.done, 3u);
  EXPECT_EQ(job->progress.ok, 2u);
  EXPECT_EQ(job->progress.failed, 1u);
  ASSERT_TRUE(job->best.has_value());
  EXPECT_EQ(job->best->index, 2u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 50.0);
  EXPECT_EQ(job->best->params_json, R"({"M":200})");
  EXPECT_EQ(store.get(other)->progress.done, 1u);
  EXPECT_EQ(store.get(other)->best->index, 0u);

  // A failed point is never best, even with a (bogus) lower median; a slower ok point is not
  // either; a faster one is.
  store.add_results(std::vector<result_row>{row(id, 5, false, 1.0), row(id, 1, true, 60.0)}, 11);
  job = store.get(id);
  EXPECT_EQ(job->best->index, 2u);
  EXPECT_EQ(job->progress.failed, 2u);
  store.add_results(std::vector<result_row>{row(id, 3, true, 49.5)}, 12);
  job = store.get(id);
  EXPECT_EQ(job->best->index, 3u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 49.5);
  EXPECT_EQ(job->progress.done, 6u);
  EXPECT_EQ(job->progress.ok, 4u);

  // A duplicate row is ignored: progress is not counted twice and the stored row is unchanged.
  auto dup = row(id, 3, true, 1.0);
  dup.result_json = R"({"replaced":true})";
  store.add_results(std::vector<result_row>{dup}, 13);
  job = store.get(id);
  EXPECT_EQ(job->progress.done, 6u);
  EXPECT_EQ(job->progress.ok, 4u);
  EXPECT_EQ(job->best->index, 3u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 49.5);
  const auto stored = store.results(id, 3, 1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].result_json, R"({"index":3})");

  store.add_results(std::span<const result_row>{}, 14);  // no-op
  EXPECT_EQ(store.get(id)->progress.done, 6u);
}

TEST_P(JobStore, OnlyFailedPointsMeansNoBest) {
  const auto id = store.submit(submission("j"), 1).id;
  store.add_results(
      std::vector<result_row>{row(id, 0, false, std::nullopt), row(id, 1, false, 3.0)}, 2);
  const auto job = store.get(id);
  EXPECT_EQ(job->progress.failed, 2u);
  EXPECT_FALSE(job->best.has_value());
}

TEST_P(JobStore, ResultIndicesSortedAndPaging) {
  const auto id = store.submit(submission("j", {}, 10), 1).id;
  std::vector<result_row> rows;
  for (std::uint64_t i : {7u, 2u, 9u, 0u, 5u})
    rows.push_back(row(id, i, true, double(i + 1)));
  store.add_results(rows, 5);
  EXPECT_EQ(store.result_indices(id), (std::vector<std::uint64_t>{0, 2, 5, 7, 9}));
  EXPECT_TRUE(store.result_indices(id + 1).empty());

  auto indices = [](const std::vector<stored_result>& r) {
    std::vector<std::uint64_t> out;
    for (const auto& x : r)
      out.push_back(x.index);
    return out;
  };
  EXPECT_EQ(indices(store.results(id, 0, 2)), (std::vector<std::uint64_t>{0, 2}));
  // Offsets count rows, not indices (index 3 has no row yet).
  EXPECT_EQ(indices(store.results(id, 2, 2)), (std::vector<std::uint64_t>{5, 7}));
  EXPECT_EQ(indices(store.results(id, 4, 10)), (std::vector<std::uint64_t>{9}));
  EXPECT_TRUE(store.results(id, 5, 10).empty());
  EXPECT_EQ(indices(store.results(id, 0, UINT64_MAX)).size(), 5u);
  const auto first = store.results(id, 1, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].params_json, R"({"M":200})");
  EXPECT_EQ(first[0].result_json, R"({"index":2})");
}

TEST_P(JobStore, PendingRequeueFinishAndCounts) {
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 2).id;
  const auto c = store.submit(submission("c"), 3).id;
  const auto d = store.submit(submission("d"), 4).id;
  ASSERT_TRUE(store.start(b, 1, 10));
  ASSERT_EQ(store.cancel(b, 11), cancel_outcome::requested);
  store.finish(c, job_status::succeeded, std::nullopt, 12);

  const auto pending = store.pending();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].id, a);
  EXPECT_EQ(pending[0].status, job_status::queued);
  EXPECT_EQ(pending[0].priority, 3);
  EXPECT_EQ(pending[0].engine, engine_kind::mock);
  EXPECT_EQ(pending[0].requested_device, 1);
  EXPECT_EQ(pending[1].id, b);
  EXPECT_EQ(pending[1].status, job_status::running);
  EXPECT_TRUE(pending[1].cancel_requested);
  EXPECT_EQ(pending[2].id, d);

  store.requeue(b);
  EXPECT_EQ(store.get(b)->status, job_status::queued);
  store.requeue(c);  // only running jobs go back to the queue
  EXPECT_EQ(store.get(c)->status, job_status::succeeded);

  store.finish(d, job_status::failed, point_error{"device_fault", "worker crashed"}, 99);
  const auto failed = store.get(d);
  EXPECT_EQ(failed->status, job_status::failed);
  EXPECT_EQ(failed->finished_ms, 99);
  ASSERT_TRUE(failed->error.has_value());
  EXPECT_EQ(failed->error->type, "device_fault");
  EXPECT_EQ(failed->error->message, "worker crashed");
  EXPECT_FALSE(store.get(c)->error.has_value());

  const auto counts = store.count_by_status();
  EXPECT_EQ(counts.at(job_status::queued), 2);
  EXPECT_EQ(counts.at(job_status::succeeded), 1);
  EXPECT_EQ(counts.at(job_status::failed), 1);
  EXPECT_EQ(counts.count(job_status::running), 0u);
  EXPECT_EQ(counts.count(job_status::cancelled), 0u);
}

// --- imports -----------------------------------------------------------------------------------

job_submission imported(std::uint64_t total) {
  job_submission s = submission("nsys import", {{"source", "nsys"}}, total);
  s.engine = engine_kind::imported;
  s.requested_device.reset();
  s.op = "import";
  return s;
}

std::vector<result_row> imported_rows() {
  // Their job_id is not known yet (0); the store sets it.
  return {row(0, 0, true, 45.5), row(0, 1, true, 4.4), row(0, 2, true, 9.0)};
}

TEST_P(JobStore, ImportStoresAFinishedJobWithEveryRow) {
  const auto queued = store.submit(submission("measured"), 1).id;
  const auto out = store.import_job(imported(3), imported_rows(), 5000);
  EXPECT_TRUE(out.created);
  EXPECT_GT(out.id, queued);

  const auto job = store.get(out.id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, job_status::succeeded);
  EXPECT_EQ(job->engine, engine_kind::imported);
  EXPECT_EQ(job->op, "import");
  EXPECT_FALSE(job->requested_device);
  EXPECT_FALSE(job->device);
  EXPECT_EQ(job->created_ms, 5000);
  EXPECT_EQ(job->started_ms, 5000);
  EXPECT_EQ(job->finished_ms, 5000);
  EXPECT_EQ(job->progress.total, 3u);
  EXPECT_EQ(job->progress.done, 3u);
  EXPECT_EQ(job->progress.ok, 3u);
  EXPECT_EQ(job->progress.failed, 0u);
  ASSERT_TRUE(job->best);
  EXPECT_EQ(job->best->index, 1u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 4.4);
  EXPECT_EQ(job->spec_json, R"({"kernel":{"op":"gemm"}})");

  EXPECT_EQ(store.result_indices(out.id), (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(store.results(out.id, 2, 1).at(0).result_json, R"({"index":2})");
  list_filter by_label;
  by_label.labels = {{"source", "nsys"}};
  EXPECT_EQ(ids(store.list(by_label)), (std::vector<std::int64_t>{out.id}));
  list_filter done;
  done.statuses = {job_status::succeeded};
  EXPECT_EQ(ids(store.list(done)), (std::vector<std::int64_t>{out.id}));
  // Finished: nothing for the scheduler to run.
  ASSERT_EQ(store.pending().size(), 1u);
  EXPECT_EQ(store.pending()[0].id, queued);
}

TEST_P(JobStore, ImportIdempotencyKey) {
  auto sub = imported(3);
  sub.idempotency_key = "nightly-7";
  const auto first = store.import_job(sub, imported_rows(), 1);
  const auto again = store.import_job(sub, imported_rows(), 2);
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(again.created);
  EXPECT_FALSE(again.conflict);
  EXPECT_EQ(again.id, first.id);
  sub.request_hash = "another body";
  const auto other = store.import_job(sub, imported_rows(), 3);
  EXPECT_TRUE(other.conflict);
  EXPECT_EQ(store.list({}).size(), 1u);
  EXPECT_EQ(store.get(first.id)->progress.done, 3u);  // not stored twice
}

TEST_P(JobStore, ScoresAndFlagsOfEveryPointInIndexOrder) {
  const auto id = store.submit(submission("scored", {}, 3), 1).id;
  auto a = row(id, 2, true, 10.0);
  a.score = {true, true, 0.5, 1.5, std::nullopt};
  a.flags = {"excessive_speedup"};
  auto b = row(id, 0, true, 20.0);
  b.score = {true, false, 0.0, std::nullopt, 0.25};
  b.flags = {"faster_than_roofline", "excessive_speedup"};
  auto c = row(id, 1, false, std::nullopt);
  store.add_results(std::vector<result_row>{a, b, c}, 5);
  const auto points = store.scored_points(id);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_TRUE(points[0].ok);
  EXPECT_FALSE(points[0].correct);
  EXPECT_EQ(points[0].latency_score, 0.25);
  EXPECT_FALSE(points[0].speedup);
  EXPECT_FALSE(points[1].ok);
  EXPECT_EQ(points[1].combined_score, 0.0);
  EXPECT_TRUE(points[2].correct);
  EXPECT_DOUBLE_EQ(points[2].combined_score, 0.5);
  EXPECT_EQ(points[2].speedup, 1.5);
  EXPECT_EQ(store.result_flags(id),
            (std::vector<std::string>{"excessive_speedup", "faster_than_roofline"}));
  EXPECT_TRUE(store.scored_points(id + 1).empty());
  EXPECT_TRUE(store.result_flags(id + 1).empty());
}

TEST_P(JobStore, TheResultCacheCopiesACompleteJobsRowsMarkedWithTheJobThatMeasuredThem) {
  const auto first = store.submit(submission("first", {}, 2), 1).id;
  store.set_cache_key(first, "key-a");
  EXPECT_FALSE(store.find_cached("key-a", 0));  // not finished yet
  auto r0 = row(first, 0, true, 8.0);
  r0.result_json = R"({"index":0,"status":"ok","flags":["excessive_speedup"]})";
  r0.score = {true, true, 1.0, 3.0, std::nullopt};
  r0.flags = {"excessive_speedup"};
  store.add_results(std::vector<result_row>{r0, row(first, 1, true, 4.0)}, 2);
  store.finish(first, job_status::succeeded, std::nullopt, 3, std::nullopt);
  EXPECT_EQ(store.find_cached("key-a", 0), first);
  EXPECT_FALSE(store.find_cached("key-a", first));  // not itself
  EXPECT_FALSE(store.find_cached("key-b", 0));

  const auto second = store.submit(submission("second", {}, 2), 4).id;
  store.set_cache_key(second, "key-a");
  EXPECT_EQ(store.find_cached("key-a", second), first);
  EXPECT_EQ(store.copy_cached_results(first, second, 5), first);
  auto job = store.get(second);
  EXPECT_EQ(job->cached_from, first);
  EXPECT_EQ(job->progress.done, 2u);
  EXPECT_EQ(job->progress.ok, 2u);
  ASSERT_TRUE(job->best);
  EXPECT_EQ(job->best->index, 1u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 4.0);
  const auto rows = store.results(second, 0, 10);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].result_json, R"({"index":0,"status":"ok","flags":["excessive_speedup"],)"
                                 R"("cache":{"hit":true,"job_id":)" +
                                     std::to_string(first) + "}}");
  EXPECT_EQ(rows[1].result_json,
            R"({"index":1,"cache":{"hit":true,"job_id":)" + std::to_string(first) + "}}");
  EXPECT_EQ(store.results_after(second, 0, 10).at(0).result_json, rows[1].result_json);
  // The copies keep their scores and flags.
  EXPECT_EQ(store.scored_points(second).at(0).speedup, 3.0);
  EXPECT_EQ(store.result_flags(second), (std::vector<std::string>{"excessive_speedup"}));
  // The measured rows are untouched.
  EXPECT_EQ(store.results(first, 0, 1).at(0).result_json, r0.result_json);

  // A copy of a copy names the job that measured the rows, and its rows carry one "cache".
  store.finish(second, job_status::succeeded, std::nullopt, 6, std::nullopt);
  const auto third = store.submit(submission("third", {}, 2), 7).id;
  EXPECT_EQ(store.copy_cached_results(second, third, 8), first);
  EXPECT_EQ(store.get(third)->cached_from, first);
  EXPECT_EQ(store.results(third, 1, 1).at(0).result_json, rows[1].result_json);
}

TEST_P(JobStore, RooflinesAreKeptPerDeviceAndReplaced) {
  EXPECT_FALSE(store.roofline("mock|MI300X|0"));
  store.put_roofline("mock|MI300X|0", R"({"bandwidth_gbps":1})", 10);
  store.put_roofline("mock|MI300X|1", R"({"bandwidth_gbps":2})", 11);
  EXPECT_EQ(store.roofline("mock|MI300X|0"), R"({"bandwidth_gbps":1})");
  store.put_roofline("mock|MI300X|0", R"({"bandwidth_gbps":3})", 12);
  EXPECT_EQ(store.roofline("mock|MI300X|0"), R"({"bandwidth_gbps":3})");
  EXPECT_EQ(store.roofline("mock|MI300X|1"), R"({"bandwidth_gbps":2})");
}

TEST_P(JobStore, PingAndMetrics) {
  EXPECT_NO_THROW(store.ping());
  for (const auto& m : store.metrics()) {
    EXPECT_EQ(m.name.rfind("kernelscan_", 0), 0u) << m.name;
    EXPECT_TRUE(m.type == "gauge" || m.type == "counter") << m.type;
    EXPECT_FALSE(m.help.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, JobStore, ::testing::ValuesIn(testing::store_backends()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace kernelscan
