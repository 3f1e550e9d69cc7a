// The pool of released device allocations (buffer_pool.hpp) and the host blocks recycled on it
// (host_blocks.hpp): what is handed out again, what is freed, and when.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "engine/buffer_pool.hpp"
#include "engine/host_blocks.hpp"

namespace kernelscan {
namespace {

buffer_pool::allocation block(std::uintptr_t handle, std::uint64_t bytes, std::uint64_t guard = 0) {
  return {handle, handle - guard, bytes, guard, bytes + 2 * guard};
}

// A pool whose frees are noted: freed() is what it freed since the last call, in order.
class BufferPool : public ::testing::Test {
 protected:
  buffer_pool make(std::uint64_t capacity) {
    return buffer_pool(capacity,
                       [this](const buffer_pool::allocation& a) { m_freed.push_back(a.handle); });
  }
  std::vector<std::uintptr_t> freed() { return std::exchange(m_freed, {}); }

  std::vector<std::uintptr_t> m_freed;
};

TEST_F(BufferPool, HandsOutAKeptAllocationOfExactlyTheSizeAndGuardAsked) {
  buffer_pool pool = make(1000);
  pool.keep(block(10, 100));
  pool.keep(block(20, 100, 8));
  pool.keep(block(30, 200));
  EXPECT_TRUE(freed().empty());
  EXPECT_EQ(pool.bytes(), 100u + 116u + 200u);
  EXPECT_FALSE(pool.take(100, 4)) << "another guard";
  EXPECT_FALSE(pool.take(150, 0)) << "another size, even a smaller one";
  const auto guarded = pool.take(100, 8);
  ASSERT_TRUE(guarded);
  EXPECT_EQ(guarded->handle, 20u);
  EXPECT_EQ(guarded->base, 12u);
  EXPECT_EQ(pool.bytes(), 300u);
  EXPECT_EQ(pool.take(100, 0)->handle, 10u);
  EXPECT_FALSE(pool.take(100, 0)) << "taken once only";
  EXPECT_EQ(pool.bytes(), 200u);
}

TEST_F(BufferPool, TheOneKeptLastIsTakenFirst) {
  buffer_pool pool = make(1000);
  pool.keep(block(1, 64));
  pool.keep(block(2, 64));
  EXPECT_EQ(pool.take(64, 0)->handle, 2u);
  EXPECT_EQ(pool.take(64, 0)->handle, 1u);
}

TEST_F(BufferPool, KeepsNoMoreThanItsCapacityAndFreesTheOldestFirst) {
  buffer_pool pool = make(300);
  pool.keep(block(1, 100));
  pool.keep(block(2, 100));
  pool.keep(block(3, 100));
  EXPECT_TRUE(freed().empty());
  pool.keep(block(4, 150));
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{1, 2}));
  EXPECT_EQ(pool.bytes(), 250u);
  // One larger than the whole capacity is freed at once, and nothing else goes.
  pool.keep(block(5, 301));
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{5}));
  EXPECT_EQ(pool.bytes(), 250u);
  // A smaller capacity frees the oldest beyond it.
  pool.set_capacity(200);
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{3}));
  EXPECT_EQ(pool.bytes(), 150u);
  pool.clear();
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{4}));
  EXPECT_EQ(pool.bytes(), 0u);
  EXPECT_TRUE(pool.empty());
}

TEST_F(BufferPool, WhatNoPointTookSinceBeforeThePreviousPointIsFreed) {
  buffer_pool pool = make(1000);
  pool.begin_point();  // point 1
  EXPECT_TRUE(freed().empty());
  pool.keep(block(1, 10));  // released during point 1
  pool.begin_point();       // point 2: the last point needed it
  EXPECT_TRUE(freed().empty());
  pool.keep(block(2, 10));  // released during point 2
  // Point 3: block 1 was kept before point 2 began, and point 2 did not take it.
  pool.begin_point();
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{1}));
  // Taken and released again in point 3, block 2 lives on into point 4.
  const auto again = pool.take(10, 0);
  ASSERT_TRUE(again);
  pool.keep(*again);
  pool.begin_point();  // point 4
  EXPECT_TRUE(freed().empty());
  pool.begin_point();  // point 5
  EXPECT_EQ(freed(), (std::vector<std::uintptr_t>{2}));
  EXPECT_TRUE(pool.empty());
}

TEST(HostBlocks, ALargeBlockFreedWhileACacheIsInUseIsHandedOutAgain) {
  constexpr std::size_t big = 4u << 20;
  host_block_cache cache;
  const host_block_cache::use in_use(cache);
  const unsigned char* first = nullptr;
  {
    host_bytes a;
    a.resize(big);
    std::memset(a.data(), 7, big);
    first = a.data();
  }
  EXPECT_EQ(cache.kept_bytes(), big);
  host_bytes b;
  b.resize(big);
  EXPECT_EQ(b.data(), first) << "the same block";
  EXPECT_EQ(b[big - 1], 7) << "resize() left the recycled bytes as they were";
  EXPECT_EQ(cache.kept_bytes(), 0u);
  host_bytes other;
  other.resize(big + 1);
  EXPECT_NE(other.data(), first) << "another size is a new block";
}

TEST(HostBlocks, SmallBlocksAndBlocksFreedWithNoCacheInUseAreNotKept) {
  host_block_cache cache;
  {
    const host_block_cache::use in_use(cache);
    host_bytes small(1000);
  }
  EXPECT_EQ(cache.kept_bytes(), 0u);
  { host_bytes big(2u << 20); }
  EXPECT_EQ(cache.kept_bytes(), 0u);
}

TEST(HostBlocks, ABlockNoPointTookForTwoPointsIsFreed) {
  host_block_cache cache;
  const host_block_cache::use in_use(cache);
  cache.begin_point();
  { host_bytes a(2u << 20); }
  cache.begin_point();
  EXPECT_EQ(cache.kept_bytes(), 2u << 20);
  cache.begin_point();
  EXPECT_EQ(cache.kept_bytes(), 0u);
}

}  // namespace
}  // namespace kernelscan
