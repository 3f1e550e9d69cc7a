// The job store's behaviour, one suite run against every backend (SQLite and PostgreSQL): what
// the server relies on must hold for both.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// A device of node "n1" asking for work: index 1 (the submissions above ask for device 1).
claim_request device(int index = 1, std::string engine = "mock", std::string node = "n1") {
  claim_request r;
  r.node = std::move(node);
  r.device = index;
  r.engine = std::move(engine);
  r.model = "MI300X";
  r.lease_ms = 60000;
  r.now_ms = unix_time_ms();
  return r;
}

class JobStore : public ::testing::TestWithParam<std::string> {
 protected:
  JobStore() : m_owner(GetParam()), store(*m_owner) {}

  // Claims job `id` for node n1's device 1, putting back the jobs claimed before it.
  job_lease take(std::int64_t id, std::int64_t now_ms = 10) {
    std::vector<job_lease> others;
    std::optional<job_lease> out;
    auto req = device();
    req.now_ms = now_ms;
    while (auto c = store.claim(req)) {
      if (c->lease.job_id == id) {
        out = c->lease;
        break;
      }
      others.push_back(c->lease);
    }
    for (const auto& l : others)
      EXPECT_TRUE(store.requeue("n1", l));
    EXPECT_TRUE(out) << "job " << id << " was not claimable";
    return out.value_or(job_lease{});
  }
  void end(std::int64_t id, job_status status, std::int64_t now_ms,
           std::optional<point_error> error = std::nullopt) {
    ASSERT_TRUE(store.finish("n1", take(id), status, error, now_ms, std::nullopt));
  }

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
  take(j2);
  end(j3, job_status::succeeded, 20);

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

TEST_P(JobStore, TasksAreCreatedOnceListedByNameAndRetired) {
  task_record t{"matmul", "C = A*B", R"({"kernel":{"op":"custom"},"held_out":{"N":[96]}})", 100,
                std::nullopt};
  EXPECT_TRUE(store.create_task(t));
  task_record other = t;
  other.description = "another";
  EXPECT_FALSE(store.create_task(other));  // the name is taken: nothing changes
  EXPECT_TRUE(store.create_task({"axpy", "", "{}", 200, std::nullopt}));

  const auto read = store.task("matmul");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->description, "C = A*B");
  EXPECT_EQ(read->template_json, t.template_json);
  EXPECT_EQ(read->created_ms, 100);
  EXPECT_FALSE(read->retired_ms);
  EXPECT_FALSE(store.task("nope"));
  const auto all = store.tasks();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "axpy");
  EXPECT_EQ(all[1].name, "matmul");

  EXPECT_EQ(store.retire_task("matmul", 300), retire_outcome::retired);
  EXPECT_EQ(store.retire_task("matmul", 400), retire_outcome::already_retired);
  EXPECT_EQ(store.retire_task("nope", 400), retire_outcome::not_found);
  EXPECT_EQ(store.task("matmul")->retired_ms, 300);
  EXPECT_FALSE(store.task("axpy")->retired_ms);
  EXPECT_FALSE(store.create_task(t));  // a retired task's name stays taken

  // A job for a retired task is not stored, whatever the caller read of the task before.
  auto late = submission("late");
  late.task = "matmul";
  const auto refused = store.submit(late, 500);
  EXPECT_TRUE(refused.task_retired);
  EXPECT_FALSE(refused.created);
  late.task = "axpy";
  const auto stored = store.submit(late, 500);
  EXPECT_FALSE(stored.task_retired);
  EXPECT_TRUE(stored.created);
  EXPECT_EQ(store.get(stored.id)->task, "axpy");
}

TEST_P(JobStore, JobsCarryTheirTaskAndAreListedByIt) {
  auto with_task = [](std::string name, std::optional<std::string> task) {
    auto s = submission(std::move(name));
    s.task = std::move(task);
    return s;
  };
  const auto a = store.submit(with_task("a", "matmul"), 1).id;
  const auto b = store.submit(with_task("b", std::nullopt), 2).id;
  const auto c = store.submit(with_task("c", "axpy"), 3).id;
  const auto d = store.submit(with_task("d", "matmul"), 4).id;
  EXPECT_EQ(store.get(a)->task, "matmul");
  EXPECT_FALSE(store.get(b)->task);
  list_filter matmul;
  matmul.task = "matmul";
  EXPECT_EQ(ids(store.list(matmul)), (std::vector<std::int64_t>{d, a}));
  EXPECT_EQ(store.list(matmul)[0].task, "matmul");
  matmul.before_id = d;
  EXPECT_EQ(ids(store.list(matmul)), (std::vector<std::int64_t>{a}));
  list_filter axpy;
  axpy.task = "axpy";
  EXPECT_EQ(ids(store.list(axpy)), (std::vector<std::int64_t>{c}));
  list_filter none;
  none.task = "none";
  EXPECT_TRUE(store.list(none).empty());
}

// A task's bound on an agent's submissions is checked where the job would be stored: jobs of
// that task and agent created since the window's start are counted, and none is stored past it.
TEST_P(JobStore, ATasksJobsAreCountedPerAgentAndBounded) {
  auto from = [](std::string agent, std::optional<job_submission::bound> bound,
                 std::string task = "axpy") {
    auto s = submission("candidate");
    s.task = std::move(task);
    s.agent = std::move(agent);
    s.agent_bound = bound;
    return s;
  };
  const job_submission::bound two{2, 150};  // two since t=150
  EXPECT_TRUE(store.submit(from("token:a", two), 100).created);
  EXPECT_TRUE(store.submit(from("token:a", two), 200).created);
  EXPECT_TRUE(store.submit(from("token:a", two), 300).created);  // the first is before 150
  const auto refused = store.submit(from("token:a", two), 400);
  EXPECT_TRUE(refused.over_bound);
  EXPECT_FALSE(refused.created);
  EXPECT_EQ(refused.counted.jobs, 2);
  EXPECT_EQ(refused.counted.oldest_ms, 200);
  // Another agent, another task, and the same agent without a bound (an operator) are not
  // counted against it.
  EXPECT_TRUE(store.submit(from("token:b", two), 400).created);
  EXPECT_TRUE(store.submit(from("token:a", two, "matmul"), 400).created);
  EXPECT_TRUE(store.submit(from("token:a", std::nullopt), 400).created);

  EXPECT_EQ(store.agent_submissions("axpy", "token:a", 0).jobs, 4);
  EXPECT_EQ(store.agent_submissions("axpy", "token:a", 150).jobs, 3);
  EXPECT_EQ(store.agent_submissions("axpy", "token:a", 150).oldest_ms, 200);
  EXPECT_EQ(store.agent_submissions("axpy", "token:b", 0).jobs, 1);
  const auto none = store.agent_submissions("axpy", "token:c", 0);
  EXPECT_EQ(none.jobs, 0);
  EXPECT_FALSE(none.oldest_ms);
}

TEST_P(JobStore, AClaimStartsTheJobOnTheNodesDeviceUnderALease) {
  const auto id = store.submit(submission("j"), 100).id;
  auto req = device();
  req.now_ms = 150;
  const auto c = store.claim(req);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->lease.job_id, id);
  EXPECT_EQ(c->lease.attempt, 1);
  EXPECT_EQ(c->spec_json, R"({"kernel":{"op":"gemm"}})");
  EXPECT_FALSE(c->cancel_requested);
  auto job = store.get(id);
  EXPECT_EQ(job->status, job_status::running);
  EXPECT_EQ(job->device, 1);
  EXPECT_EQ(job->node, "n1");
  EXPECT_EQ(job->started_ms, 150);
  EXPECT_FALSE(store.claim(req));  // nothing else queued

  // A requeued job is claimed again, under a new attempt, and keeps its first start time.
  EXPECT_TRUE(store.requeue("n1", c->lease));
  EXPECT_EQ(store.get(id)->status, job_status::queued);
  EXPECT_FALSE(store.requeue("n1", c->lease));  // only running jobs go back
  auto other = device(1, "mock", "n2");
  other.now_ms = 500;
  const auto again = store.claim(other);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->lease.attempt, 2);
  EXPECT_EQ(store.get(id)->started_ms, 150);
  EXPECT_EQ(store.get(id)->node, "n2");

  // The first claim's lease is gone: it changes nothing any more.
  EXPECT_FALSE(
      store.finish("n1", c->lease, job_status::succeeded, std::nullopt, 900, std::nullopt));
  EXPECT_FALSE(
      store.finish("n2", c->lease, job_status::succeeded, std::nullopt, 900, std::nullopt));
  EXPECT_FALSE(store.requeue("n1", again->lease));  // another node's
  EXPECT_EQ(store.get(id)->status, job_status::running);
  EXPECT_TRUE(
      store.finish("n2", again->lease, job_status::succeeded, std::nullopt, 900, std::nullopt));
  EXPECT_EQ(store.get(id)->status, job_status::succeeded);
  EXPECT_EQ(store.get(id)->finished_ms, 900);
  EXPECT_FALSE(store.claim(other));
}

TEST_P(JobStore, ClaimsGoByPriorityThenSubmissionAndMatchTheDevice) {
  auto sub = [&](const std::string& name, int priority, engine_kind engine,
                 std::optional<int> device_index) {
    auto s = submission(name);
    s.priority = priority;
    s.engine = engine;
    s.requested_device = device_index;
    return store.submit(s, 1).id;
  };
  const auto low = sub("low", -5, engine_kind::any, std::nullopt);
  const auto first = sub("first", 0, engine_kind::any, std::nullopt);
  const auto pinned = sub("pinned to 3", 7, engine_kind::any, 3);
  const auto second = sub("second", 0, engine_kind::mock, std::nullopt);
  const auto urgent = sub("urgent", 9, engine_kind::any, std::nullopt);
  const auto gpu = sub("gpu", 8, engine_kind::hip, std::nullopt);

  auto next = [&](int index, const char* engine) -> std::int64_t {
    const auto c = store.claim(device(index, engine));
    return c ? c->lease.job_id : 0;
  };
  // A job pinned to another device or another engine does not hold back the ones behind it.
  EXPECT_EQ(next(0, "mock"), urgent);
  EXPECT_EQ(next(0, "mock"), first);
  EXPECT_EQ(next(0, "mock"), second);
  EXPECT_EQ(next(3, "hip"), gpu);
  EXPECT_EQ(next(3, "hip"), pinned);
  EXPECT_EQ(next(3, "hip"), low);
  EXPECT_EQ(next(0, "mock"), 0);
}

TEST_P(JobStore, AClaimPassesOverTheJobsNeedingWhatItsDeviceLacks) {
  auto sub = [&](const std::string& name, std::uint32_t needs) {
    auto s = submission(name);
    s.engine = engine_kind::any;
    s.requested_device = std::nullopt;
    s.needs = needs;
    return store.submit(s, 1).id;
  };
  const auto half = sub("needs bit 4", 0b10000);
  const auto wide = sub("needs bits 0 and 1", 0b11);
  const auto plain = sub("needs nothing", 0);
  auto next = [&](int index, std::uint32_t lacks) -> std::int64_t {
    auto r = device(index);
    r.lacks = lacks;
    const auto c = store.claim(r);
    return c ? c->lease.job_id : 0;
  };
  // A device lacking bit 4 skips the first job but takes the next it can run; one lacking
  // bit 1 too takes only the job needing nothing; one lacking nothing takes the rest in order.
  EXPECT_EQ(next(0, 0b10000), wide);
  EXPECT_EQ(next(1, 0b10010), plain);
  EXPECT_EQ(next(1, 0b10010), 0);
  EXPECT_EQ(next(2, 0), half);
  EXPECT_EQ(store.get(half)->device, 2);
}

TEST_P(JobStore, LeasesAreRenewedLostExpiredAndCarryCancelRequests) {
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 2).id;
  auto req = device();
  req.lease_ms = 60000;
  const auto la = store.claim(req)->lease;
  req.lease_ms = 1;  // runs out at once
  const auto lb = store.claim(req)->lease;
  ASSERT_EQ(la.job_id, a);
  ASSERT_EQ(lb.job_id, b);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));

  // Only the run-out lease expires; its job goes back to the queue.
  EXPECT_EQ(store.expire_leases(unix_time_ms()), (std::vector<std::int64_t>{b}));
  EXPECT_EQ(store.get(b)->status, job_status::queued);
  EXPECT_EQ(store.get(a)->status, job_status::running);
  EXPECT_TRUE(store.expire_leases(unix_time_ms()).empty());

  ASSERT_EQ(store.cancel(a, 5), cancel_outcome::requested);
  const std::vector<job_lease> held{la, lb};
  const auto renewal = store.renew_leases("n1", held, 60000, unix_time_ms());
  EXPECT_EQ(renewal.lost, (std::vector<std::int64_t>{b}));
  EXPECT_EQ(renewal.cancel_requested, (std::vector<std::int64_t>{a}));
  // Another node renews nothing of n1's.
  EXPECT_EQ(store.renew_leases("n2", std::vector<job_lease>{la}, 60000, unix_time_ms()).lost,
            (std::vector<std::int64_t>{a}));
  EXPECT_TRUE(store.renew_leases("n1", {}, 60000, unix_time_ms()).lost.empty());

  // A job with a cancel request whose lease runs out ends cancelled rather than queued.
  EXPECT_TRUE(store.requeue("n1", la));
  EXPECT_EQ(store.get(a)->status, job_status::queued);
  req.lease_ms = 1;
  const auto again = store.claim(req);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->lease.job_id, a);
  EXPECT_TRUE(again->cancel_requested);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(store.expire_leases(unix_time_ms()), (std::vector<std::int64_t>{a}));
  const auto cancelled = store.get(a);
  EXPECT_EQ(cancelled->status, job_status::cancelled);
  ASSERT_TRUE(cancelled->error);
  EXPECT_EQ(cancelled->error->type, "cancelled");
}

TEST_P(JobStore, ARestartingNodeGetsBackTheJobsItLeftRunning) {
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 2).id;
  const auto c = store.submit(submission("c"), 3).id;
  const auto la = store.claim(device())->lease;
  store.claim(device());
  store.claim(device(1, "mock", "n2"));
  ASSERT_EQ(store.cancel(b, 4), cancel_outcome::requested);
  EXPECT_EQ(store.recover_node("n1", 50), (std::vector<std::int64_t>{a, b}));
  EXPECT_EQ(store.get(a)->status, job_status::queued);
  EXPECT_EQ(store.get(b)->status, job_status::cancelled);
  EXPECT_EQ(store.get(b)->finished_ms, 50);
  EXPECT_EQ(store.get(c)->status, job_status::running);  // n2's
  EXPECT_FALSE(store.finish("n1", la, job_status::succeeded, std::nullopt, 60, std::nullopt));
  EXPECT_TRUE(store.recover_node("n1", 70).empty());
}

TEST_P(JobStore, CancelOutcomes) {
  const auto queued = store.submit(submission("q"), 1).id;
  const auto running = store.submit(submission("r"), 2).id;
  const auto finished = store.submit(submission("f"), 3).id;
  end(finished, job_status::failed, 20, point_error{"internal", "boom"});
  take(running);

  EXPECT_EQ(store.cancel(queued, 100), cancel_outcome::cancelled);
  const auto q = store.get(queued);
  EXPECT_EQ(q->status, job_status::cancelled);
  EXPECT_TRUE(q->cancel_requested);
  EXPECT_EQ(q->finished_ms, 100);
  ASSERT_TRUE(q->error.has_value());
  EXPECT_EQ(q->error->type, "cancelled");
  EXPECT_FALSE(store.claim(device()));  // a cancelled job is never claimed
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
  take(id);

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

  // A failed point is never best, even with a (bogus) lower median, nor a faster one whose flags
  // void its score (a wrong answer); a slower ok point is not either; a faster one is.
  auto wrong = row(id, 1, true, 10.0);
  wrong.flags = {"verification_failed"};
  store.add_results(std::vector<result_row>{row(id, 5, false, 1.0), wrong}, 11);
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

// A node that held measured points in memory while its database was away, and measured some of
// them again after it resumed the job, stores both copies in one batch: each point is stored and
// counted once, the copy measured first kept.
TEST_P(JobStore, APointTwiceInOneBatchIsStoredAndCountedOnce) {
  const auto id = store.submit(submission("j", {}, 4), 1).id;
  take(id);
  store.add_results(std::vector<result_row>{row(id, 0, true, 50.0)}, 10);

  auto again = row(id, 1, true, 10.0);
  again.result_json = R"({"again":true})";
  auto failed_again = row(id, 2, true, 30.0);
  failed_again.ok = false;
  const std::vector<result_row> batch{row(id, 1, true, 40.0), row(id, 2, true, 45.0), again,
                                      failed_again, row(id, 0, true, 5.0)};
  store.add_results(batch, 11);

  const auto job = store.get(id);
  EXPECT_EQ(job->progress.done, 3u);
  EXPECT_EQ(job->progress.ok, 3u);
  EXPECT_EQ(job->progress.failed, 0u);
  ASSERT_TRUE(job->best.has_value());
  EXPECT_EQ(job->best->index, 1u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 40.0);
  const auto stored = store.results(id, 0, 10);
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[1].result_json, R"({"index":1})");
}

// A problem-size sweep: the smallest size is the fastest, the largest does the most work per
// microsecond. The best is ranked by cost (time per unit of work), and shows its own median.
TEST_P(JobStore, TheBestPointIsTheLowestCostNotTheSmallestMedian) {
  const auto id = store.submit(submission("sizes", {}, 4), 1).id;
  take(id);
  auto sized = [&](std::uint64_t index, double median, double flops) {
    auto r = row(id, index, true, median);
    r.cost = median / flops;
    return r;
  };
  // One at a time, and then a batch whose best is not its first row.
  store.add_results(std::vector<result_row>{sized(0, 10.0, 1e6)}, 2);
  store.add_results(std::vector<result_row>{sized(1, 40.0, 8e6)}, 3);
  auto job = store.get(id);
  EXPECT_EQ(job->best->index, 1u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 40.0);
  store.add_results(std::vector<result_row>{sized(2, 30.0, 4e6), sized(3, 200.0, 64e6)}, 4);
  job = store.get(id);
  EXPECT_EQ(job->best->index, 3u);
  EXPECT_DOUBLE_EQ(job->best->median_us, 200.0);
  EXPECT_EQ(job->best->params_json, R"({"M":300})");
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

TEST_P(JobStore, FinishRecordsTheEndAndCountsGoByStatus) {
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 2).id;
  const auto c = store.submit(submission("c"), 3).id;
  const auto d = store.submit(submission("d"), 4).id;
  take(b);
  end(c, job_status::succeeded, 12);
  const auto ld = take(d);
  ASSERT_TRUE(store.finish("n1", ld, job_status::failed,
                           point_error{"device_fault", "worker crashed"}, 99,
                           R"({"correct":false})"));
  EXPECT_FALSE(store.finish("n1", ld, job_status::succeeded, std::nullopt, 100, std::nullopt));
  const auto failed = store.get(d);
  EXPECT_EQ(failed->status, job_status::failed);
  EXPECT_EQ(failed->finished_ms, 99);
  ASSERT_TRUE(failed->error.has_value());
  EXPECT_EQ(failed->error->type, "device_fault");
  EXPECT_EQ(failed->error->message, "worker crashed");
  EXPECT_EQ(failed->fitness_json, R"({"correct":false})");
  EXPECT_FALSE(store.get(c)->error.has_value());

  const auto counts = store.count_by_status();
  EXPECT_EQ(counts.at(job_status::queued), 1);
  EXPECT_EQ(counts.at(job_status::running), 1);
  EXPECT_EQ(counts.at(job_status::succeeded), 1);
  EXPECT_EQ(counts.at(job_status::failed), 1);
  EXPECT_EQ(counts.count(job_status::cancelled), 0u);
  EXPECT_EQ(store.get(a)->status, job_status::queued);
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
  // Finished: nothing to claim but the queued job.
  EXPECT_EQ(store.claim(device())->lease.job_id, queued);
  EXPECT_FALSE(store.claim(device()));
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
  // Each point's flags, and the point's index.
  EXPECT_EQ(points[0].flags,
            (std::vector<std::string>{"faster_than_roofline", "excessive_speedup"}));
  EXPECT_TRUE(points[1].flags.empty());
  EXPECT_EQ(points[2].flags, std::vector<std::string>{"excessive_speedup"});
  for (std::uint64_t i = 0; i < 3; ++i)
    EXPECT_EQ(points[i].index, i);
  EXPECT_TRUE(store.scored_points(id + 1).empty());
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
  end(first, job_status::succeeded, 3);
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
  EXPECT_EQ(store.scored_points(second).at(0).flags,
            (std::vector<std::string>{"excessive_speedup"}));
  // The measured rows are untouched.
  EXPECT_EQ(store.results(first, 0, 1).at(0).result_json, r0.result_json);

  // A copy of a copy names the job that measured the rows, and its rows carry one "cache".
  end(second, job_status::succeeded, 6);
  const auto third = store.submit(submission("third", {}, 2), 7).id;
  EXPECT_EQ(store.copy_cached_results(second, third, 8), first);
  EXPECT_EQ(store.get(third)->cached_from, first);
  EXPECT_EQ(store.results(third, 1, 1).at(0).result_json, rows[1].result_json);
}

TEST_P(JobStore, AJobThatEndedIsDeletedWithItsRowsAndNoOtherIs) {
  const auto done = store.submit(submission("done", {{"team", "perf"}}, 2), 1).id;
  const auto kept = store.submit(submission("kept", {{"team", "perf"}}, 2), 1).id;
  const auto queued = store.submit(submission("queued"), 1).id;
  const auto running = store.submit(submission("running"), 1).id;
  store.add_results(std::vector<result_row>{row(done, 0, true, 8.0), row(done, 1, true, 4.0),
                                            row(kept, 0, true, 2.0)},
                    2);
  end(done, job_status::succeeded, 3);
  end(kept, job_status::failed, 3, point_error{"internal", "boom"});
  take(running);

  EXPECT_TRUE(store.exists(done));
  EXPECT_EQ(store.delete_job(done), delete_outcome::deleted);
  EXPECT_FALSE(store.exists(done));
  EXPECT_TRUE(store.exists(kept));
  EXPECT_FALSE(store.get(done));
  EXPECT_FALSE(store.spec_json(done));
  EXPECT_TRUE(store.results(done, 0, 10).empty());
  EXPECT_TRUE(store.result_indices(done).empty());
  list_filter by_label;
  by_label.labels = {{"team", "perf"}};
  EXPECT_EQ(ids(store.list(by_label)), (std::vector<std::int64_t>{kept}));
  EXPECT_EQ(store.delete_job(done), delete_outcome::not_found);

  // The others are as they were; jobs that may still change are not deleted.
  EXPECT_EQ(store.results(kept, 0, 10).size(), 1u);
  EXPECT_EQ(store.delete_job(queued), delete_outcome::not_finished);
  EXPECT_EQ(store.delete_job(running), delete_outcome::not_finished);
  EXPECT_EQ(store.get(queued)->status, job_status::queued);
  EXPECT_EQ(store.get(running)->status, job_status::running);
  EXPECT_EQ(store.delete_job(9999), delete_outcome::not_found);
  // A new job never takes a deleted job's id.
  EXPECT_GT(store.submit(submission("after"), 4).id, running);
  EXPECT_EQ(store.count_by_status()[job_status::succeeded], 0);
  EXPECT_EQ(store.count_by_status()[job_status::failed], 1);
}

TEST_P(JobStore, ADeletedTaskJobStaysCountedAgainstItsAgent) {
  auto from = [](std::string agent) {
    auto s = submission("candidate");
    s.task = "axpy";
    s.agent = std::move(agent);
    s.agent_bound = job_submission::bound{2, 0};
    return s;
  };
  const auto first = store.submit(from("token:a"), 100).id;
  const auto second = store.submit(from("token:a"), 200).id;
  end(first, job_status::succeeded, 150);
  end(second, job_status::succeeded, 250);
  ASSERT_EQ(store.delete_job(first), delete_outcome::deleted);
  ASSERT_EQ(store.delete_job(second), delete_outcome::deleted);
  const auto counted = store.agent_submissions("axpy", "token:a", 0);
  EXPECT_EQ(counted.jobs, 2);
  EXPECT_EQ(counted.oldest_ms, 100);
  EXPECT_EQ(store.agent_submissions("axpy", "token:a", 150).jobs, 1);
  EXPECT_EQ(store.agent_submissions("axpy", "token:b", 0).jobs, 0);
  const auto refused = store.submit(from("token:a"), 300);
  EXPECT_TRUE(refused.over_bound);
  EXPECT_EQ(refused.counted.jobs, 2);
  EXPECT_TRUE(store.submit(from("token:b"), 300).created);
}

TEST_P(JobStore, JobsThatEndedBeforeATimeComeFirstEndedFirst) {
  const auto a = store.submit(submission("a"), 1).id;
  const auto b = store.submit(submission("b"), 1).id;
  const auto c = store.submit(submission("c"), 1).id;
  const auto d = store.submit(submission("d"), 1).id;
  const auto queued = store.submit(submission("queued"), 1).id;
  end(a, job_status::succeeded, 300);
  end(b, job_status::failed, 100, point_error{"internal", "boom"});
  ASSERT_EQ(store.cancel(c, 200), cancel_outcome::cancelled);
  end(d, job_status::succeeded, 900);
  EXPECT_EQ(store.ended_before(400, 10), (std::vector<std::int64_t>{b, c, a}));
  EXPECT_EQ(store.ended_before(400, 2), (std::vector<std::int64_t>{b, c}));
  EXPECT_EQ(store.ended_before(300, 10), (std::vector<std::int64_t>{b, c}));
  EXPECT_TRUE(store.ended_before(100, 10).empty());
  EXPECT_EQ(store.ended_before(1'000'000, 10), (std::vector<std::int64_t>{b, c, a, d}));
  (void)queued;
}

TEST_P(JobStore, PointsOfADeletedJobAreDroppedAndTheirBatchStored) {
  const auto gone = store.submit(submission("gone", {}, 2), 1).id;
  const auto live = store.submit(submission("live", {}, 2), 1).id;
  end(gone, job_status::cancelled, 2);
  ASSERT_EQ(store.delete_job(gone), delete_outcome::deleted);
  take(live);
  // A point measured before the job was deleted, stored after (a store that was away).
  store.add_results(std::vector<result_row>{row(gone, 0, true, 3.0), row(live, 0, true, 5.0)}, 3);
  EXPECT_FALSE(store.get(gone));
  EXPECT_TRUE(store.results(gone, 0, 10).empty());
  EXPECT_EQ(store.get(live)->progress.done, 1u);
  EXPECT_EQ(store.results(live, 0, 10).size(), 1u);
}

TEST_P(JobStore, TheResultCacheCopiesNothingFromAJobDeletedSinceItWasFound) {
  const auto first = store.submit(submission("first", {}, 1), 1).id;
  store.set_cache_key(first, "key-a");
  store.add_results(std::vector<result_row>{row(first, 0, true, 8.0)}, 2);
  end(first, job_status::succeeded, 3);
  const auto second = store.submit(submission("second", {}, 1), 4).id;
  ASSERT_EQ(store.find_cached("key-a", second), first);
  ASSERT_EQ(store.delete_job(first), delete_outcome::deleted);
  EXPECT_FALSE(store.copy_cached_results(first, second, 5));
  EXPECT_EQ(store.get(second)->progress.done, 0u);
  EXPECT_FALSE(store.get(second)->cached_from);
  EXPECT_FALSE(store.find_cached("key-a", second));
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

TEST_P(JobStore, NodesReportTheirDevicesWithEachHeartbeat) {
  // On PostgreSQL a store is one daemon's: n2 has its own.
  auto other = GetParam() == "postgresql" ? m_owner.open_another() : nullptr;
  job_store& n2 = other ? *other : store;
  store.join({"n1", "instance-a", "1.0", 100, 0, false}, unix_time_ms());
  n2.join({"n2", "instance-b", "1.0", 200, 0, false}, unix_time_ms());
  auto dev = [](const std::string& node, int index, const std::string& state,
                std::optional<std::int64_t> job) {
    device_record d;
    d.node = node;
    d.index = index;
    d.engine = "mock";
    d.model = "MI300X";
    d.state = state;
    d.current_job = job;
    d.info_json = R"({"index":)" + std::to_string(index) + "}";
    return d;
  };
  store.heartbeat(
      "n1", std::vector<device_record>{dev("n1", 0, "idle", std::nullopt), dev("n1", 1, "busy", 7)},
      unix_time_ms());
  n2.heartbeat("n2", std::vector<device_record>{dev("n2", 0, "idle", std::nullopt)},
               unix_time_ms());
  auto devices = store.devices(unix_time_ms());
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].node, "n1");
  EXPECT_EQ(devices[0].index, 0);
  EXPECT_EQ(devices[1].state, "busy");
  EXPECT_EQ(devices[1].current_job, 7);
  EXPECT_EQ(devices[1].info_json, R"({"index":1})");
  EXPECT_EQ(devices[2].node, "n2");
  for (const auto& d : devices) {
    EXPECT_GE(d.heartbeat_age_ms, 0);
    EXPECT_LT(d.heartbeat_age_ms, 5000);
    EXPECT_FALSE(d.node_stopped);
  }
  // A device the node no longer reports is gone; one that changed is updated.
  store.heartbeat("n1", std::vector<device_record>{dev("n1", 1, "idle", std::nullopt)},
                  unix_time_ms());
  devices = store.devices(unix_time_ms());
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].index, 1);
  EXPECT_EQ(devices[0].state, "idle");
  EXPECT_FALSE(devices[0].current_job);

  n2.leave("n2", unix_time_ms());
  const auto nodes = store.nodes(unix_time_ms());
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(nodes[0].instance, "instance-a");
  EXPECT_EQ(nodes[0].started_ms, 100);
  EXPECT_FALSE(nodes[0].stopped);
  EXPECT_TRUE(nodes[1].stopped);
  EXPECT_TRUE(store.devices(unix_time_ms()).back().node_stopped);
}

TEST_P(JobStore, ConcurrentClaimsTakeEachJobOnce) {
  constexpr int jobs = 120, claimers = 6;
  for (int i = 0; i < jobs; ++i)
    store.submit(submission("j" + std::to_string(i)), i);
  // Each claimer is a node of its own; on PostgreSQL each has its own connections, as daemons.
  std::vector<std::unique_ptr<job_store>> stores;
  for (int i = 0; i < claimers; ++i)
    stores.push_back(GetParam() == "postgresql" ? m_owner.open_another() : nullptr);
  std::vector<std::vector<std::int64_t>> taken(claimers);
  std::vector<std::thread> threads;
  for (int i = 0; i < claimers; ++i) {
    threads.emplace_back([&, i] {
      job_store& s = stores[std::size_t(i)] ? *stores[std::size_t(i)] : store;
      while (auto c = s.claim(device(1, "mock", "node" + std::to_string(i))))
        taken[std::size_t(i)].push_back(c->lease.job_id);
    });
  }
  for (auto& t : threads)
    t.join();
  std::vector<std::int64_t> all;
  for (const auto& t : taken)
    all.insert(all.end(), t.begin(), t.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.size(), std::size_t(jobs));
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a job claimed twice";
  EXPECT_EQ(store.count_by_status()[job_status::running], jobs);
}

// What needs several daemons on one database: PostgreSQL only (one daemon uses a SQLite file).
TEST_P(JobStore, TwoLiveNodesCannotShareAName) {
  if (GetParam() == "sqlite") GTEST_SKIP() << "one daemon uses a SQLite file";
  store.join({"gpu-07", "first", "1.0", 1, 0, false}, unix_time_ms());
  {
    auto other = m_owner.open_another();
    EXPECT_THROW(other->join({"gpu-07", "second", "1.0", 2, 0, false}, unix_time_ms()),
                 node_conflict);
    EXPECT_NO_THROW(other->join({"gpu-08", "third", "1.0", 3, 0, false}, unix_time_ms()));
  }
  // Once the first is gone (its connections closed, as when its process dies), the name is free.
  m_owner.reopen();
  auto again = m_owner.open_another();
  EXPECT_NO_THROW(again->join({"gpu-07", "fourth", "1.0", 4, 0, false}, unix_time_ms()));
  EXPECT_EQ(again->nodes(unix_time_ms()).front().instance, "fourth");
}

TEST_P(JobStore, EventsReachEveryOtherNode) {
  if (GetParam() == "sqlite") GTEST_SKIP() << "one daemon uses a SQLite file";
  struct inbox {
    std::mutex mutex;
    std::vector<store_event> events;
    std::size_t size() {
      std::lock_guard lock(mutex);
      return events.size();
    }
  };
  inbox at_a, at_b;
  auto b = m_owner.open_another();
  store.subscribe([&](const store_event& e) {
    std::lock_guard lock(at_a.mutex);
    at_a.events.push_back(e);
  });
  b->subscribe([&](const store_event& e) {
    std::lock_guard lock(at_b.mutex);
    at_b.events.push_back(e);
  });
  store.join({"a", "ia", "1.0", 1, 0, false}, unix_time_ms());
  b->join({"b", "ib", "1.0", 1, 0, false}, unix_time_ms());
  store.publish_event({"job", R"({"id":7})"});
  store.publish_event({"points", R"({"job_id":7,"done":3})"});
  b->publish_event({"job", R"({"id":8})"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((at_b.size() < 2 || at_a.size() < 1) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // nothing more arrives
  ASSERT_EQ(at_b.size(), 2u);
  EXPECT_EQ(at_b.events[0].type, "job");
  EXPECT_EQ(at_b.events[0].data, R"({"id":7})");
  EXPECT_EQ(at_b.events[1].type, "points");
  EXPECT_EQ(at_b.events[1].data, R"({"job_id":7,"done":3})");
  ASSERT_EQ(at_a.size(), 1u);  // not its own
  EXPECT_EQ(at_a.events[0].data, R"({"id":8})");
}

INSTANTIATE_TEST_SUITE_P(Backends, JobStore, ::testing::ValuesIn(testing::store_backends()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace kernelscan
