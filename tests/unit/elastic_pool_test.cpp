#include "server/detail/elastic_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

namespace kernelscan::detail {
namespace {

using namespace std::chrono_literals;

// Holds the tasks that wait on it until opened.
class gate {
 public:
  void wait() {
    std::unique_lock lock(m_mutex);
    ++m_waiting;
    m_changed.notify_all();
    m_changed.wait(lock, [this] { return m_open; });
  }
  void open() {
    std::lock_guard lock(m_mutex);
    m_open = true;
    m_changed.notify_all();
  }
  // Waits until `n` tasks wait here, for at most 5 s.
  bool await_waiting(int n) {
    std::unique_lock lock(m_mutex);
    return m_changed.wait_for(lock, 5s, [&] { return m_waiting >= n; });
  }
  int waiting() {
    std::lock_guard lock(m_mutex);
    return m_waiting;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_changed;
  int m_waiting = 0;
  bool m_open = false;
};

bool eventually(const std::function<bool()>& condition) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(ElasticPool, ATaskGetsAThreadWhileEveryOtherThreadIsBusy) {
  elastic_pool pool(2, 8, 10s);
  EXPECT_EQ(pool.threads(), 2u);
  gate stuck;
  for (int i = 0; i < 5; ++i)
    pool.post([&] { stuck.wait(); });
  // Five stuck tasks on a pool of two: each got its own thread, none waits in the queue.
  EXPECT_TRUE(stuck.await_waiting(5));
  EXPECT_EQ(pool.threads(), 5u);
  std::atomic<bool> ran{false};
  pool.post([&] { ran = true; });
  EXPECT_TRUE(eventually([&] { return ran.load(); }));
  stuck.open();
}

TEST(ElasticPool, PastTheCapTasksWaitTheirTurn) {
  elastic_pool pool(1, 3, 10s);
  gate stuck;
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i)
    pool.post([&] {
      stuck.wait();
      ++done;
    });
  EXPECT_TRUE(stuck.await_waiting(3));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(stuck.waiting(), 3);
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_EQ(pool.peak_threads(), 3u);
  stuck.open();
  EXPECT_TRUE(eventually([&] { return done == 5; }));
}

TEST(ElasticPool, PastTheCapOnlySoManyTasksWaitAndARefusedTaskIsLeftWhole) {
  elastic_pool pool(1, 2, 10s, 2);
  gate stuck;
  std::atomic<int> done{0};
  const auto task = [&] {
    stuck.wait();
    ++done;
  };
  for (int i = 0; i < 4; ++i) {
    std::function<void()> f = task;
    EXPECT_TRUE(pool.post(std::move(f))) << i;  // two run, two wait
  }
  EXPECT_TRUE(stuck.await_waiting(2));
  std::function<void()> refused = [&] { done += 100; };
  EXPECT_FALSE(pool.post(std::move(refused)));
  ASSERT_TRUE(refused);  // left to the caller, who may still run it
  refused();
  EXPECT_EQ(done, 100);
  stuck.open();
  EXPECT_TRUE(eventually([&] { return done == 104; }));
  // Room again: a task is taken.
  std::function<void()> later = [&] { ++done; };
  EXPECT_TRUE(pool.post(std::move(later)));
  EXPECT_TRUE(eventually([&] { return done == 105; }));
}

TEST(ElasticPool, ExtraThreadsEndAfterLingeringWithoutWork) {
  elastic_pool pool(2, 6, 50ms);
  gate stuck;
  for (int i = 0; i < 6; ++i)
    pool.post([&] { stuck.wait(); });
  EXPECT_TRUE(stuck.await_waiting(6));
  stuck.open();
  EXPECT_TRUE(eventually([&] { return pool.threads() == 2; }));
  // The retired threads are joined by the next post, which still runs.
  std::atomic<bool> ran{false};
  pool.post([&] { ran = true; });
  EXPECT_TRUE(eventually([&] { return ran.load(); }));
  EXPECT_EQ(pool.peak_threads(), 6u);
}

TEST(ElasticPool, ShutdownRunsWhatWasPostedThenRefusesMore) {
  std::atomic<int> done{0};
  elastic_pool pool(1, 2, 10s);
  for (int i = 0; i < 20; ++i)
    pool.post([&] {
      std::this_thread::sleep_for(1ms);
      ++done;
    });
  pool.shutdown();
  EXPECT_EQ(done, 20);
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_THROW(pool.post([] {}), std::logic_error);
  pool.shutdown();  // again: nothing to do
}

}  // namespace
}  // namespace kernelscan::detail
