#pragma once
// The threads that serve client connections, for cpp-httplib (its TaskQueue): one thread per
// connection, started as needed up to `max_threads`; past them, up to `max_waiting` connections
// wait for a thread; any more are refused at once. httplib's own ThreadPool starts every thread
// up front and queues connections without bound, so a flood of idle connections would pile up
// descriptors and memory. A refused connection's job runs on the accepting thread with
// refusing_this_connection() true, and must answer without blocking (a 503) and close.
#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen::proxy {

class ConnectionQueue : public httplib::TaskQueue {
 public:
  ConnectionQueue(size_t max_threads, size_t max_waiting) : max_threads_(max_threads), max_waiting_(max_waiting) {}
  ~ConnectionQueue() override { shutdown(); }
  ConnectionQueue(const ConnectionQueue&) = delete;
  ConnectionQueue& operator=(const ConnectionQueue&) = delete;

  void enqueue(std::function<void()> job) override;
  // Lets the waiting connections be served, then joins every thread.
  void shutdown() override;

  static bool refusing_this_connection();

 private:
  void work();

  const size_t max_threads_;
  const size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;  // threads waiting for a job
  bool stopping_ = false;
};

}  // namespace lumen::proxy
