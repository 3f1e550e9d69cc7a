// The helper threads the comparison spreads over: every task runs once, groups of several
// threads share the helpers, a task's exception reaches wait(), and a group finishes on its own
// thread while every helper is busy with another group.
#include "engine/host_tasks.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kernelscan {
namespace {

TEST(HostTasks, EveryTaskRunsOnce) {
  for (const std::size_t n : {0u, 1u, 2u, 7u, 1000u}) {
    std::vector<std::atomic<int>> runs(n);
    const std::function<void(std::size_t)> fn = [&](std::size_t i) { ++runs[i]; };
    task_group g(n, fn);
    g.wait();
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(runs[i].load(), 1) << "task " << i << " of " << n;
  }
}

TEST(HostTasks, ASingleTaskRunsOnTheWaitingThread) {
  std::thread::id ran_on;
  const std::function<void(std::size_t)> fn = [&](std::size_t) {
    ran_on = std::this_thread::get_id();
  };
  task_group g(1, fn);
  g.wait();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(HostTasks, GroupsOfSeveralThreadsAtOnceAllFinish) {
  std::atomic<std::uint64_t> sum{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        const std::function<void(std::size_t)> fn = [&](std::size_t i) { sum += i + 1; };
        task_group g(64, fn);
        g.wait();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(sum.load(), 4u * 50u * (64u * 65u / 2));
}

TEST(HostTasks, ATasksExceptionReachesWaitAfterTheOthersRan) {
  std::atomic<int> ran{0};
  const std::function<void(std::size_t)> fn = [&](std::size_t i) {
    ++ran;
    if (i == 5) throw std::runtime_error("task 5 failed");
  };
  task_group g(40, fn);
  EXPECT_THROW(
      {
        try {
          g.wait();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "task 5 failed");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(ran.load(), 40);
  g.wait();  // once only
}

TEST(HostTasks, AGroupFinishesOnItsOwnThreadWhileEveryHelperIsBusy) {
  // A group whose tasks hold every helper (and its own waiting thread) until released.
  std::mutex m;
  std::condition_variable cv;
  bool released = false;
  std::atomic<std::size_t> holding{0};
  const std::size_t held = task_group::helpers() + 1;
  const std::function<void(std::size_t)> hold = [&](std::size_t) {
    ++holding;
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return released; });
  };
  std::thread busy([&] {
    task_group g(held, hold);
    g.wait();
  });
  while (holding.load() < held)
    std::this_thread::yield();
  // Every helper is taken: this group's tasks all run here.
  std::atomic<int> ran{0};
  const std::function<void(std::size_t)> fn = [&](std::size_t) { ++ran; };
  task_group g(16, fn);
  g.wait();
  EXPECT_EQ(ran.load(), 16);
  {
    const std::lock_guard lock(m);
    released = true;
  }
  cv.notify_all();
  busy.join();
}

}  // namespace
}  // namespace kernelscan
