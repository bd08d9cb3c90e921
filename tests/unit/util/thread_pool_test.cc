#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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


// Records every span; each worker writes its own list, as the contract allows.
class SpanRecorder : public WorkerSpanObserver {
 public:
  explicit SpanRecorder(unsigned workers) : spans_(workers) {}
  void on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) override {
    spans_[worker].push_back({begin_ns, end_ns, tasks});
  }
  struct Span {
    int64_t begin, end, tasks;
  };
  std::vector<std::vector<Span>> spans_;
};

TEST(ThreadPool, ObserverSeesEveryWorkersTasksAndTheirTimes) {
  ThreadPool pool(2);
  SpanRecorder recorder(2);
  pool.set_observer(&recorder);
  const auto before = std::chrono::steady_clock::now().time_since_epoch();
  // Tasks long enough that both workers get some.
  pool.parallel_for(16, [](int64_t, unsigned) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
  pool.parallel_for(1, [](int64_t, unsigned) {});  // run inline on the caller: still seen
  const auto after = std::chrono::steady_clock::now().time_since_epoch();
  pool.set_observer(nullptr);
  pool.parallel_for(4, [](int64_t, unsigned) {});  // not seen any more

  int64_t tasks = 0;
  for (const auto& spans : recorder.spans_) {
    for (const auto& s : spans) {
      EXPECT_LE(s.begin, s.end);
      EXPECT_GE(s.begin, std::chrono::duration_cast<std::chrono::nanoseconds>(before).count());
      EXPECT_LE(s.end, std::chrono::duration_cast<std::chrono::nanoseconds>(after).count());
      tasks += s.tasks;
    }
  }
  EXPECT_EQ(tasks, 17);
  EXPECT_EQ(recorder.spans_[0].size(), 2u);  // the caller: one span per parallel_for
  ASSERT_EQ(recorder.spans_[1].size(), 1u);  // the other worker took part in the first only
  // 16 sleeps of 3 ms shared by two workers: each span is at least one sleep long.
  EXPECT_GE(recorder.spans_[1][0].end - recorder.spans_[1][0].begin, 3'000'000);
}

}  // namespace
}  // namespace lumen
