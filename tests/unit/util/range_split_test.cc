// RangeSplit: every unit is handed out exactly once, owners read their own range front to
// back, and idle parts take the rest from the back of the fullest range.
#include "util/range_split.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "util/error.h"

namespace lumen {
namespace {

using Runs = std::vector<std::pair<int64_t, int64_t>>;

TEST(RangeSplit, OnePartTakesItsRangeFrontToBackInSteps) {
  RangeSplit split;
  split.reset(10, 1);
  Runs runs;
  split.run(0, 3, [&](int64_t b, int64_t e) { runs.emplace_back(b, e); });
  EXPECT_EQ(runs, (Runs{{0, 3}, {3, 6}, {6, 9}, {9, 10}}));
}

TEST(RangeSplit, AnIdlePartTakesTheFullestRangeFromTheBack) {
  RangeSplit split;
  split.reset(12, 3);  // ranges [0, 4), [4, 8), [8, 12)
  Runs first;
  // Part 1 alone: its own range from the front, then the others' from the back, fullest first
  // (ties to the lower part).
  split.run(1, 2, [&](int64_t b, int64_t e) { first.emplace_back(b, e); });
  EXPECT_EQ(first, (Runs{{4, 6}, {6, 8}, {2, 4}, {10, 12}, {0, 2}, {8, 10}}));
  Runs later;
  split.run(0, 2, [&](int64_t b, int64_t e) { later.emplace_back(b, e); });
  EXPECT_TRUE(later.empty());  // nothing left for a part that comes late
}

TEST(RangeSplit, FrontIsTheNextUnitOfAPartsOwnRange) {
  RangeSplit split;
  split.reset(12, 3);  // ranges [0, 4), [4, 8), [8, 12)
  EXPECT_EQ(split.front(0), 0);
  EXPECT_EQ(split.front(1), 4);
  EXPECT_EQ(split.front(2), 8);
  // Part 0 runs alone: its own units move its front; the back units it takes from the others
  // leave their fronts where they were until nothing is left between front and back.
  int64_t calls = 0;
  split.run(0, 1, [&](int64_t b, int64_t) {
    if (++calls == 4) {
      EXPECT_EQ(b, 3);
      EXPECT_EQ(split.front(0), 4);  // its range used up
      EXPECT_EQ(split.front(1), 4);
      EXPECT_EQ(split.front(2), 8);
    }
    if (b == 11) {
      EXPECT_EQ(split.front(2), 8);  // a steal from part 2's back
    }
  });
  EXPECT_EQ(calls, 12);
}

TEST(RangeSplit, EmptyAndUnevenSplits) {
  RangeSplit split;
  split.reset(0, 4);
  int calls = 0;
  for (int p = 0; p < 4; ++p) split.run(p, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  split.reset(3, 8);  // more parts than units: some ranges are empty
  std::vector<int> seen(3, 0);
  for (int p = 0; p < 8; ++p) {
    split.run(p, 1, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) ++seen[static_cast<size_t>(u)];
    });
  }
  EXPECT_EQ(seen, (std::vector<int>{1, 1, 1}));
  EXPECT_THROW(split.reset(-1, 2), Error);
  EXPECT_THROW(split.reset(5, 0), Error);
  EXPECT_THROW(split.reset(RangeSplit::kMaxUnits, 2), Error);
}

// Threads racing over the same split, one of them slowed down: every unit exactly once, and
// the fast threads end up doing most of the slow one's range.
TEST(RangeSplit, ConcurrentPartsTakeEveryUnitExactlyOnce) {
  constexpr int kParts = 4;
  constexpr int64_t kUnits = 5000;
  constexpr int kRounds = 20;
  RangeSplit split;
  int64_t slow_total = 0;
  for (int round = 0; round < kRounds; ++round) {
    split.reset(kUnits, kParts);
    std::vector<std::atomic<int>> taken(kUnits);
    std::vector<int64_t> done(kParts, 0);
    std::vector<std::thread> threads;
    for (int p = 0; p < kParts; ++p) {
      threads.emplace_back([&, p] {
        split.run(p, 1 + p % 3, [&](int64_t b, int64_t e) {
          for (int64_t u = b; u < e; ++u) taken[static_cast<size_t>(u)].fetch_add(1);
          done[static_cast<size_t>(p)] += e - b;
          if (p == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));  // the slow core
        });
      });
    }
    for (std::thread& t : threads) t.join();
    for (int64_t u = 0; u < kUnits; ++u) ASSERT_EQ(taken[static_cast<size_t>(u)].load(), 1) << "unit " << u;
    int64_t total = 0;
    for (const int64_t d : done) total += d;
    ASSERT_EQ(total, kUnits);
    slow_total += done[0];
  }
  // Summed over the rounds, so that a round where the scheduler starts the others late cannot
  // fail the test alone.
  EXPECT_LT(slow_total, kRounds * kUnits / kParts / 2) << "the slow part kept most of its range";
}

}  // namespace
}  // namespace lumen
