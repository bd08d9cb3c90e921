#include "http/connection_pool.h"

#include <system_error>

namespace lumen::http {

namespace {
thread_local bool refusing = false;
}

ConnectionPool::ConnectionPool(size_t max_threads, size_t max_queued)
    : max_threads_(max_threads == 0 ? 1 : max_threads), max_queued_(max_queued) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

bool ConnectionPool::refusing_this_connection() { return refusing; }

void ConnectionPool::enqueue(std::function<void()> task) {
  {
    std::unique_lock lock(mutex_);
    // A thread is started when every idle one already has a queued task coming to it.
    if (!stopping_ && idle_ <= queued_.size() && threads_.size() < max_threads_) {
      try {
        threads_.emplace_back([this] { work(); });
        ++idle_;  // counted idle until it takes its first task
      } catch (const std::system_error&) {
        // No thread to be had: the connection waits or is refused like any other.
      }
    }
    // Queued tasks beyond the idle threads that will take them wait; at most max_queued_ do.
    const size_t waiting = queued_.size() >= idle_ ? queued_.size() - idle_ : 0;
    if (!stopping_ && (idle_ > queued_.size() || waiting < max_queued_)) {
      queued_.push_back(std::move(task));
      lock.unlock();
      wake_.notify_one();
      return;
    }
  }
  refusing = true;
  task();
  refusing = false;
}

void ConnectionPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (queued_.empty()) return;  // stopping, and nothing left to serve
    std::function<void()> task = std::move(queued_.front());
    queued_.pop_front();
    --idle_;
    lock.unlock();
    task();
    lock.lock();
    ++idle_;
  }
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

}  // namespace lumen::http
