#include "server/job_waiters.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

TEST(JobWaiters, ANotificationWakesTheWaiterWhichChecksAgain) {
  job_waiters waiters;
  std::atomic<bool> ended{false};
  std::thread ender([&] {
    while (waiters.waiting() == 0)
      std::this_thread::sleep_for(1ms);
    ended = true;
    waiters.notify(7);
  });
  EXPECT_TRUE(waiters.wait(7, job_waiters::clock::now() + 30s, [&] { return ended.load(); }));
  ender.join();
  EXPECT_EQ(waiters.waiting(), 0u);
}

TEST(JobWaiters, AFailingCheckEndsTheWaitWithItsErrorAndLeavesNoWaiterBehind) {
  job_waiters waiters;
  int checks = 0;
  std::thread failer([&] {
    while (waiters.waiting() == 0)
      std::this_thread::sleep_for(1ms);
    waiters.notify(3);
  });
  // The first check passes (the job runs), the one after the notification cannot read the store.
  EXPECT_THROW(waiters.wait(3, job_waiters::clock::now() + 30s,
                            [&] {
                              if (++checks == 2) throw std::runtime_error("the store is away");
                              return false;
                            }),
               std::runtime_error);
  failer.join();
  EXPECT_EQ(checks, 2);
  EXPECT_EQ(waiters.waiting(), 0u);
  // The job's watch is gone too: a later wait on it starts afresh and times out normally.
  EXPECT_FALSE(waiters.wait(3, job_waiters::clock::now() + 10ms, [] { return false; }));
  EXPECT_EQ(waiters.waiting(), 0u);
}

}  // namespace
}  // namespace kernelscan
