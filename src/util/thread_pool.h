#pragma once
// A persistent pool of worker threads for data-parallel kernels. Threads are created once; a
// parallel_for hands them tasks and waits, so the per-token path creates no threads and
// allocates nothing. The calling thread takes part as worker 0.
//
// A decode step runs a few hundred parallel_for calls of tens of microseconds each, so a
// sleep/wake through the OS per call would cost more than the work. Idle workers therefore
// spin for a short while (about a millisecond) before they sleep on a condition variable.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen {

// Sees when each worker works: one call per worker per parallel_for that gave it tasks, with the
// steady_clock nanoseconds of its first task's start and its last task's end (from the worker's
// own thread; implementations must be safe for concurrent calls from different workers).
// `lumen bench profile` records these to show idle cores between parallel loops.
class WorkerSpanObserver {
 public:
  virtual ~WorkerSpanObserver() = default;
  virtual void on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) = 0;
};

class ThreadPool {
 public:
  // `threads` workers in total, the caller included (0: one per hardware thread).
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs fn(task, worker) for every task in [0, n_tasks), spread over the workers, and returns
  // when all are done. Tasks are handed out dynamically (an atomic counter), so uneven tasks
  // balance themselves. Not reentrant: one parallel_for at a time per pool.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, unsigned worker)>& fn);

  // Null (the default) to stop observing. Set only between parallel_for calls. Unobserved, the
  // cost is one pointer test per worker per parallel_for.
  void set_observer(WorkerSpanObserver* observer) { observer_.store(observer, std::memory_order_relaxed); }

 private:
  void worker_loop(unsigned worker);
  void run_tasks(unsigned worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(int64_t, unsigned)>* job_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<uint64_t> generation_{0};  // bumped (under mutex_) for each parallel_for
  std::atomic<int> pending_{0};          // workers that have not finished the current job
  std::atomic<bool> stopping_{false};    // written under mutex_ before a generation bump
  // Read by workers after the generation bump (release / acquire) that follows its store.
  std::atomic<WorkerSpanObserver*> observer_{nullptr};
};

}  // namespace lumen
