#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

namespace lumen {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  for (int64_t n : {1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t task, unsigned worker) {
      EXPECT_LT(worker, 3u);
      hits[static_cast<size_t>(task)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ManyShortJobsInARow) {
  // The decode path: hundreds of small parallel_for calls per token.
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 5000; ++round) {
    pool.parallel_for(4, [&](int64_t task, unsigned) { sum.fetch_add(task); });
  }
  EXPECT_EQ(sum.load(), 5000 * 6);
}

TEST(ThreadPool, WorkersSleepAndWakeUp) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  pool.parallel_for(8, [&](int64_t, unsigned) { count++; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: workers sleep
  pool.parallel_for(8, [&](int64_t, unsigned) { count++; });
  EXPECT_EQ(count.load(), 16);
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  std::vector<int64_t> order;
  pool.parallel_for(5, [&](int64_t task, unsigned worker) {
    EXPECT_EQ(worker, 0u);
    order.push_back(task);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace lumen
