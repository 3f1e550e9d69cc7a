// The worker supervisor over real child processes (a shell standing in for a worker): lines and
// exits reach the owner, a worker that ran is restarted at once, one that never got ready only
// after a backoff, and stop() ends it all.
#include "server/worker_supervisor.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

TEST(WorkerSupervisorProcess, AWorkerThatRanIsRestartedAtOnceOneThatNeverStartedAfterABackoff) {
  asio::io_context io;
  std::vector<std::string> lines, exits;
  std::vector<std::chrono::steady_clock::time_point> exit_times;
  bool acknowledge = true;  // take the first line as "ready"
  std::unique_ptr<worker_supervisor> sup;
  sup = std::make_unique<worker_supervisor>(
      io, std::vector<std::string>{"/bin/sh", "-c", "echo up; exit 3"}, 10.0,
      worker_supervisor::handlers{[&](std::string_view line) {
                                    lines.emplace_back(line);
                                    if (acknowledge) sup->ready();
                                  },
                                  [&](const std::string& how) {
                                    exits.push_back(how);
                                    exit_times.push_back(std::chrono::steady_clock::now());
                                    if (exits.size() == 1)
                                      acknowledge = false;  // the second one never gets ready
                                    if (exits.size() == 3) sup->stop();
                                  },
                                  [] {}});
  sup->start();
  asio::steady_timer guard(io, 10s);
  guard.async_wait([&](const asio::error_code& ec) {
    if (!ec) io.stop();
  });
  while (exits.size() < 3 && !io.stopped())
    io.run_one();
  guard.cancel();
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[0], "exited with status 3");
  EXPECT_EQ(lines, (std::vector<std::string>{"up", "up", "up"}));
  EXPECT_EQ(sup->restarts(), 2u);
  // The one that never got ready is started again only after restart_delay(1) = 200 ms.
  EXPECT_GE(exit_times[2] - exit_times[1], 200ms);
  EXPECT_FALSE(sup->failed());  // one start failure so far, not five
  EXPECT_FALSE(sup->running());
}

}  // namespace
}  // namespace kernelscan
