#include "server/job_queue.hpp"

#include <gtest/gtest.h>

namespace kernelscan {
namespace {

pending_job job(std::int64_t id, int priority, std::optional<int> device = std::nullopt) {
  pending_job j;
  j.id = id;
  j.priority = priority;
  j.requested_device = device;
  return j;
}

auto any = [](const pending_job&) { return true; };

TEST(JobQueue, HigherPriorityFirstThenSubmissionOrder) {
  job_queue q;
  q.push(job(1, 0));
  q.push(job(2, 5));
  q.push(job(3, 0));
  q.push(job(4, 5));
  q.push(job(5, -3));
  std::vector<std::int64_t> order;
  while (auto j = q.pop_first(any))
    order.push_back(j->id);
  EXPECT_EQ(order, (std::vector<std::int64_t>{2, 4, 1, 3, 5}));
  EXPECT_EQ(q.size(), 0u);
}

TEST(JobQueue, PinnedJobDoesNotBlockOthers) {
  job_queue q;
  q.push(job(1, 10, 1));  // wants device 1
  q.push(job(2, 0));
  auto for_device0 = [](const pending_job& j) {
    return !j.requested_device || *j.requested_device == 0;
  };
  auto first = q.pop_first(for_device0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, 2);
  EXPECT_FALSE(q.pop_first(for_device0));
  EXPECT_TRUE(q.contains(1));
}

TEST(JobQueue, RemoveAndDuplicates) {
  job_queue q;
  EXPECT_TRUE(q.push(job(1, 0)));
  EXPECT_FALSE(q.push(job(1, 3)));  // already queued: unchanged
  EXPECT_TRUE(q.push(job(2, 1)));
  EXPECT_TRUE(q.remove(2));
  EXPECT_FALSE(q.remove(2));
  auto j = q.pop_first(any);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->id, 1);
  EXPECT_EQ(j->priority, 0);
}

}  // namespace
}  // namespace kernelscan
