#include "proxy/connection_queue.h"

#include <utility>

namespace lumen::proxy {

namespace {

thread_local bool refusing = false;

}  // namespace

bool ConnectionQueue::refusing_this_connection() { return refusing; }

void ConnectionQueue::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      const bool idle_thread_free = jobs_.size() < idle_;
      const bool may_start_thread = threads_.size() < max_threads_;
      const size_t waiting = jobs_.size() >= idle_ ? jobs_.size() - idle_ : 0;
      if (idle_thread_free || may_start_thread || waiting < max_waiting_) {
        if (!idle_thread_free && may_start_thread) threads_.emplace_back([this] { work(); });
        jobs_.push_back(std::move(job));
        wake_.notify_one();
        return;
      }
    }
  }
  refusing = true;
  job();
  refusing = false;
}

void ConnectionQueue::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    --idle_;
    if (jobs_.empty()) return;  // stopping, and nothing left to serve
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void ConnectionQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
    wake_.notify_all();
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace lumen::proxy
