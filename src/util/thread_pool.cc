#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LUMEN_CPU_RELAX() _mm_pause()
#else
#define LUMEN_CPU_RELAX() std::this_thread::yield()
#endif

namespace lumen {

namespace {
constexpr int kSpinIterations = 20000;  // ~1 ms of pause instructions before sleeping
// The caller waits for every worker to check in. On a machine with more runnable threads than
// cores a worker may be descheduled; after this much spinning the caller yields its core
// instead, so the straggler can run (pure spinning there wasted most of a step).
constexpr int kCallerSpinIterations = 2000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& thread : workers_) thread.join();
}

void ThreadPool::run_tasks(unsigned worker) {
  WorkerSpanObserver* observer = observer_.load(std::memory_order_relaxed);
  const int64_t begin = observer != nullptr ? now_ns() : 0;
  int64_t done = 0;
  for (int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed); task < n_tasks_;
       task = next_task_.fetch_add(1, std::memory_order_relaxed), ++done) {
    (*job_)(task, worker);
  }
  if (observer != nullptr && done > 0) observer->on_worker_span(worker, begin, now_ns(), done);
}

void ThreadPool::parallel_for(int64_t n_tasks,
                              const std::function<void(int64_t, unsigned)>& fn) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    WorkerSpanObserver* observer = observer_.load(std::memory_order_relaxed);
    const int64_t begin = observer != nullptr ? now_ns() : 0;
    for (int64_t task = 0; task < n_tasks; ++task) fn(task, 0);
    if (observer != nullptr) observer->on_worker_span(0, begin, now_ns(), n_tasks);
    return;
  }
  job_ = &fn;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Bumped under the mutex so a worker about to sleep cannot miss it.
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_tasks(0);
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kCallerSpinIterations) {
      LUMEN_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

void ThreadPool::worker_loop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    bool woke = false;
    for (int spin = 0; spin < kSpinIterations; ++spin) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        woke = true;
        break;
      }
      LUMEN_CPU_RELAX();
    }
    if (!woke) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    // stopping_ is set before the generation bump that woke us (release / acquire), so a
    // plain load sees it; no lock on the per-job path.
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_.load(std::memory_order_relaxed)) return;
    run_tasks(worker);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace lumen
