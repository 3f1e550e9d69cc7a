#include "server/group_commit.hpp"

#include <gtest/gtest.h>

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

result_row point(std::int64_t job, std::uint64_t index) {
  result_row r;
  r.job_id = job;
  r.index = index;
  r.ok = true;
  return r;
}

struct fake_store {
  std::vector<std::vector<std::uint64_t>> commits;
  bool down = false;
  group_commit::writer writer() {
    return [this](std::span<const result_row> rows) {
      if (down) throw storage_error("the disk is full", true);
      std::vector<std::uint64_t> indices;
      for (const auto& r : rows)
        indices.push_back(r.index);
      commits.push_back(indices);
    };
  }
};

TEST(GroupCommit, PointsWaitAtMostTheWindowAndGoInOneCommit) {
  manual_clock clock;
  fake_store store;
  group_commit commit(store.writer(), clock, {2ms, 256, 10000, 1000ms});
  EXPECT_FALSE(commit.due());
  const auto start = clock.now();
  EXPECT_FALSE(commit.add(point(1, 0)));
  clock.advance(1ms);
  EXPECT_FALSE(commit.add(point(1, 1)));
  // The window runs from the first point held, not the last.
  EXPECT_EQ(commit.due(), start + 2ms);
  const auto stored = commit.flush();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->size(), 2u);
  EXPECT_EQ(store.commits, (std::vector<std::vector<std::uint64_t>>{{0, 1}}));
  EXPECT_FALSE(commit.due());
  EXPECT_EQ(commit.held(), 0u);
  EXPECT_TRUE(commit.flush()->empty());  // nothing held: no commit
  EXPECT_EQ(store.commits.size(), 1u);
}

TEST(GroupCommit, AFullGroupAsksToBeWrittenAtOnce) {
  manual_clock clock;
  fake_store store;
  group_commit commit(store.writer(), clock, {2ms, 3, 10000, 1000ms});
  EXPECT_FALSE(commit.add(point(1, 0)));
  EXPECT_FALSE(commit.add(point(2, 0)));
  EXPECT_TRUE(commit.add(point(1, 1)));
  EXPECT_EQ(commit.flush()->size(), 3u);
}

TEST(GroupCommit, WhileStorageFailsPointsAreHeldAndRetriedThenStoredOnce) {
  manual_clock clock;
  fake_store store;
  group_commit commit(store.writer(), clock, {2ms, 2, 4, 1000ms});
  store.down = true;
  commit.add(point(1, 0));
  EXPECT_FALSE(commit.flush());
  EXPECT_TRUE(commit.failing());
  EXPECT_EQ(commit.due(), clock.now() + 1000ms);  // the retry, not the window
  // More points wait too; a full group does not ask for a write while failing.
  EXPECT_FALSE(commit.add(point(1, 1)));
  EXPECT_FALSE(commit.full());
  commit.add(point(1, 2));
  commit.add(point(1, 3));
  EXPECT_TRUE(commit.full());  // the scheduler stops sending points
  clock.advance(1000ms);
  EXPECT_FALSE(commit.flush());
  EXPECT_EQ(commit.held(), 4u);
  store.down = false;
  clock.advance(1000ms);
  const auto stored = commit.flush();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->size(), 4u);
  EXPECT_FALSE(commit.failing());
  EXPECT_FALSE(commit.full());
  EXPECT_EQ(store.commits, (std::vector<std::vector<std::uint64_t>>{{0, 1, 2, 3}}));
}

}  // namespace
}  // namespace kernelscan
