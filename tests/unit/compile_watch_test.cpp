#include "engine/compile_watch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

// The watch is the process's: each test sets what it needs and leaves none of it behind.
struct watch_fixture : ::testing::Test {
  std::mutex mutex;
  std::vector<std::string> calls;
  void SetUp() override {
    set_compile_limits({}, [this](const std::string& why) {
      const std::lock_guard lock(mutex);
      calls.push_back(why);
    });
  }
  void TearDown() override {
    set_compile_deadline(std::nullopt, "");
    set_compile_limits({}, [](const std::string&) {});
  }
  std::vector<std::string> seen() {
    const std::lock_guard lock(mutex);
    return calls;
  }
};

TEST_F(watch_fixture, ACompilePastItsTimeIsReportedWhileItRuns) {
  set_compile_limits({0.1, 0}, [this](const std::string& why) {
    const std::lock_guard lock(mutex);
    calls.push_back(why);
  });
  {
    const compile_scope compiling;
    std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(seen().empty());
    std::this_thread::sleep_for(250ms);
  }
  const auto after = seen();
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.front(),
            "the compiler ran for more than 0.1 s (the limit on one compile) and was stopped");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(seen().size(), after.size()) << "nothing is reported once the compile ends";
}

TEST_F(watch_fixture, ACompileGainingMemoryPastItsLimitIsReported) {
  set_compile_limits({0, 64 << 20}, [this](const std::string& why) {
    const std::lock_guard lock(mutex);
    calls.push_back(why);
  });
  const compile_scope compiling;
  std::vector<char> taken(std::size_t(128) << 20, 1);  // touched: resident
  std::this_thread::sleep_for(100ms);
  const auto after = seen();
  ASSERT_FALSE(after.empty()) << resident_bytes();
  EXPECT_EQ(after.front().rfind("the compiler took more than 64 MiB of memory (the limit on one "
                                "compile) and was stopped after ",
                                0),
            0u)
      << after.front();
  EXPECT_EQ(taken[12345], 1);
}

TEST_F(watch_fixture, ACompilePastTheDeadlineIsReportedNamingIt) {
  set_compile_deadline(std::chrono::steady_clock::now() + 100ms, "the point's watchdog budget");
  const compile_scope compiling;
  const compile_scope nested;  // scopes nest: one compile
  std::this_thread::sleep_for(250ms);
  const auto after = seen();
  ASSERT_FALSE(after.empty());
  EXPECT_NE(after.front().find(" s, past the point's watchdog budget, and was stopped"),
            std::string::npos)
      << after.front();
}

TEST_F(watch_fixture, NoCompileNoReport) {
  set_compile_limits({0.01, 1}, [this](const std::string& why) {
    const std::lock_guard lock(mutex);
    calls.push_back(why);
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(seen().empty());
}

}  // namespace
}  // namespace kernelscan
